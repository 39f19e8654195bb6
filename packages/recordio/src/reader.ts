import { checkInteger, checkOneOf } from '@edl/common';
import { type ChunkInfo, chunkIndexOf, chunkInfosFromTable, planChunkAlignedRanges } from './chunk-info.js';
import { type CallSite, captureCallSite, fromThrown, RecordIOError, withCallSite } from './errors.js';
import { FileReader } from './file-reader.js';
import type { NativeReader, NativeReadResult } from './native/addon-types.js';
import { getAddon } from './native/load-addon.js';
import { type BatchRecycler, RecordBatch, splitBatch } from './record-batch.js';
import { type ChunkCacheStats, RecordCache } from './record-cache.js';

/** Options of {@link RecordIOReader.open}. */
export interface RecordIOReaderOptions {
  /**
   * What to do with a chunk that fails to decode (bad CRC, truncated, bad compression).
   * `'error'` (default): reads stop there with a RecordIOError; records before it are still
   * delivered by `records()`. `'skip'`: the chunk is passed over and counted in
   * {@link RecordIOReader.skipped}. Nothing is ever dropped silently.
   */
  readonly onCorruptChunk?: 'error' | 'skip';
  /**
   * Stored (compressed) bytes that `records()` reads per batch, rounded to whole chunks. Default
   * 4 MiB: large enough that per-batch costs vanish, small enough that the batch being consumed
   * plus the one read ahead stay a few tens of MiB even for well-compressed gzip.
   */
  readonly batchBytes?: number;
  /**
   * Decoded bytes of chunks kept for {@link RecordIOReader.get} (random access), most recently used
   * first. Default 32 MiB: a few chunks of the writer's default 1 MiB, so reads near each other
   * decode their chunk once. At least the last chunk used is kept, whatever its size.
   */
  readonly chunkCacheBytes?: number;
}

/** What skip mode passed over so far. */
export interface SkipStats {
  /** Corrupt chunks skipped (each counted once). */
  readonly chunks: number;
  /** Records in those chunks that were not delivered. */
  readonly records: number;
  /** One error per skipped chunk, naming it. */
  readonly faults: readonly RecordIOError[];
}

const OPTION_KEYS = ['onCorruptChunk', 'batchBytes', 'chunkCacheBytes'] as const;
const DEFAULT_CHUNK_CACHE_BYTES = 32 * 1024 * 1024;
const DEFAULT_BATCH_BYTES = 4 * 1024 * 1024;
/** Released buffers kept per reader (each of data and bounds): the batch in use, one read ahead, spare. */
const SPARE_BUFFERS = 4;
/** Smaller buffers are not worth keeping: malloc serves them without page faults. */
const MIN_SPARE_BYTES = 64 * 1024;

/**
 * Reads a RecordIO file (the format of the Go package wangkuiyi/recordio). Opening scans the chunk
 * headers only; `read()` and `records()` decode whole chunks on the native side and hand records to
 * JavaScript as views into one buffer per batch.
 *
 * @example
 * ```ts
 * await using reader = await RecordIOReader.open('data.rio');
 * for await (const record of reader.records()) handle(record);
 * ```
 */
export class RecordIOReader extends FileReader {
  /** Chunks in the file. */
  readonly numChunks: number;
  /** One entry per chunk, in file order. */
  readonly chunks: readonly ChunkInfo[];
  readonly #native: NativeReader;
  readonly #skipCorrupt: boolean;
  readonly #batchBytes: number;
  readonly #cache: RecordCache;
  readonly #skippedChunks = new Map<number, RecordIOError>();
  #skippedRecords = 0;
  /**
   * The records after the end of the last range that {@link RecordIOReader.batches} read, up to the
   * end of their chunk: that chunk was decoded whole, and the next range (the next task of the same
   * shard) usually starts there. It shares its buffer with the batch it was cut from.
   */
  #carry: RecordBatch | undefined;
  /** Buffers of released batches, for the next reads to decode into (most recent last). */
  #spareData: ArrayBuffer[] = [];
  #spareBounds: ArrayBuffer[] = [];
  readonly #recycle: BatchRecycler = (data, bounds) => {
    if (this.closed) return;
    if (
      data instanceof ArrayBuffer &&
      data.byteLength >= MIN_SPARE_BYTES &&
      this.#spareData.length < SPARE_BUFFERS
    ) {
      this.#spareData.push(data);
    }
    if (
      bounds instanceof ArrayBuffer &&
      bounds.byteLength >= MIN_SPARE_BYTES &&
      bounds !== data &&
      this.#spareBounds.length < SPARE_BUFFERS
    ) {
      this.#spareBounds.push(bounds);
    }
  };

  private constructor(native: NativeReader, options: Required<RecordIOReaderOptions>) {
    super(native, RecordIOError, 'the reader is closed');
    this.#native = native;
    this.#skipCorrupt = options.onCorruptChunk === 'skip';
    this.#batchBytes = options.batchBytes;
    this.#cache = new RecordCache(native, options.chunkCacheBytes, native.path);
    this.numChunks = native.numChunks;
    this.chunks = chunkInfosFromTable(native.chunkTable());
  }

  /**
   * Opens `path` and scans its chunk headers (one small read per chunk, never the payloads).
   *
   * @throws TypeError / RangeError for bad arguments; RecordIOError `IO` when the file cannot be
   * read, `BAD_MAGIC` / `TRUNCATED` when a chunk header is damaged.
   */
  static async open(path: string, options?: RecordIOReaderOptions): Promise<RecordIOReader> {
    // Everything up to the native open runs before the first await: the stack is still the caller's.
    return RecordIOReader.#open(path, options, RecordIOReader.open);
  }

  /** Synchronous {@link RecordIOReader.open}, for command-line tools and scripts. */
  static openSync(path: string, options?: RecordIOReaderOptions): RecordIOReader {
    return RecordIOReader.#open(path, options, RecordIOReader.openSync);
  }

  static #open(path: unknown, options: unknown, callSite: CallSite): RecordIOReader {
    const { file, options: opts } = FileReader.checkOpenArguments(path, options, OPTION_KEYS);
    const onCorruptChunk =
      opts.onCorruptChunk === undefined
        ? 'error'
        : checkOneOf(opts.onCorruptChunk, 'options.onCorruptChunk', ['error', 'skip'] as const);
    const batchBytes = FileReader.batchBytesOption(opts.batchBytes, DEFAULT_BATCH_BYTES);
    const chunkCacheBytes =
      opts.chunkCacheBytes === undefined
        ? DEFAULT_CHUNK_CACHE_BYTES
        : checkInteger(opts.chunkCacheBytes, 'options.chunkCacheBytes', 0, Number.MAX_SAFE_INTEGER);
    let native: NativeReader;
    try {
      native = getAddon().openReader(file);
    } catch (error) {
      throw fromThrown(error, callSite, file);
    }
    return new RecordIOReader(native, { onCorruptChunk, batchBytes, chunkCacheBytes });
  }

  /** Chunks and records skipped so far (always zero unless `onCorruptChunk` is `'skip'`). */
  get skipped(): SkipStats {
    return {
      chunks: this.#skippedChunks.size,
      records: this.#skippedRecords,
      faults: [...this.#skippedChunks.values()],
    };
  }

  /**
   * Reads records `[start, start + count)` as one batch, decoded on the libuv thread pool.
   *
   * @throws RecordIOError `OUT_OF_RANGE` when the range is outside the file, `CLOSED` after close,
   * and the chunk's fault (`CHECKSUM`, `TRUNCATED`, ...) when a chunk is corrupt and
   * `onCorruptChunk` is `'error'`. A read is never silently short.
   */
  async read(start: number, count: number): Promise<RecordBatch> {
    const callSite = captureCallSite(this.read);
    this.#checkRange(start, count, callSite);
    if (count === 0) return RecordBatch.empty(start);
    const result = await this.#readNative(start, count, callSite);
    return this.#toBatch(result, start, callSite, true);
  }

  /**
   * Synchronous {@link RecordIOReader.read}: decodes on the calling thread.
   *
   * Call `batch.release()` when done with a batch (its views become invalid): the next read then
   * decodes into the same memory, so a loop of `readSync` calls stays at a constant footprint and
   * never page-faults fresh memory. Batches that are merely dropped go back to the addon only when
   * V8 collects them *and* the event loop turns: a long synchronous loop that neither releases
   * nor yields holds every batch it has read.
   */
  readSync(start: number, count: number): RecordBatch {
    const callSite = this.readSync;
    this.#checkRange(start, count, callSite);
    if (count === 0) return RecordBatch.empty(start);
    return this.#toBatch(this.#readNow(start, count, callSite), start, callSite, true);
  }

  /**
   * Record `index` for random access (Grain's `get`), from a cache of decoded chunks bounded by
   * `chunkCacheBytes`: reads near each other decode their chunk once, on the libuv pool. The record
   * is a view (no copy) that keeps its chunk alive. Safe to call concurrently.
   *
   * @throws RecordIOError `OUT_OF_RANGE`, `CLOSED`, or the fault of the record's chunk (`CHECKSUM`,
   * `TRUNCATED`, ...) whatever `onCorruptChunk` says: a record that cannot be decoded is never
   * replaced.
   */
  get(index: number): Promise<Uint8Array> {
    const callSite = captureCallSite(this.get);
    try {
      checkInteger(index, 'index', 0, Number.MAX_SAFE_INTEGER);
      this.#checkRange(index, 1, callSite);
      this.checkOpen(callSite);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.#cache.get(index, callSite);
  }

  /** {@link RecordIOReader.get} for many records at once (each chunk decoded once). */
  getMany(indices: readonly number[]): Promise<Uint8Array[]> {
    return Promise.all(indices.map((index) => this.get(index)));
  }

  /** Synchronous {@link RecordIOReader.get}: decodes a missing chunk on the calling thread. */
  getSync(index: number): Uint8Array {
    checkInteger(index, 'index', 0, Number.MAX_SAFE_INTEGER);
    this.#checkRange(index, 1, this.getSync);
    this.checkOpen(this.getSync);
    return this.#cache.getSync(index, this.getSync);
  }

  /** Hits, misses, decodes and bytes of the chunk cache behind {@link RecordIOReader.get}. */
  get chunkCacheStats(): ChunkCacheStats {
    return this.#cache.stats();
  }

  /**
   * Chunk-aligned batches of `[start, start + count)` for `batches()` and `records()`, read one
   * ahead of the consumer: on the libuv pool, except a first read of stored (uncompressed) chunks,
   * which is waited for at once and runs on the calling thread.
   */
  protected override rangeBatches(
    start: number,
    count: number | undefined,
    callSite: Error,
  ): AsyncIterableIterator<RecordBatch> {
    const total =
      count ?? (Number.isSafeInteger(start) && start >= 0 ? Math.max(this.numRecords - start, 0) : 0);
    this.#checkRange(start, total, callSite);
    return this.#iterateBatches(start, total, callSite);
  }

  /**
   * The fault at the end of the file, from the chunk headers alone: a damaged or partial chunk
   * header after the last good chunk (the index stops there; `chunk` is `numChunks`), or a last
   * chunk whose payload runs past the end of the file (TRUNCATED; `chunk` is that chunk). Undefined
   * when every chunk fits in the file. No payload is decoded. (Reads that reach `numRecords` report
   * this fault too, after every record before it.)
   */
  tailFault(): RecordIOError | undefined {
    const callSite = this.tailFault;
    this.checkOpen(callSite);
    let result: NativeReadResult;
    try {
      result = this.#native.readSync(this.numRecords, 0, false);
    } catch (error) {
      throw fromThrown(error, callSite, this.path);
    }
    return result.error === null ? undefined : RecordIOError.fromNative(result.error, callSite);
  }

  protected override releaseFile(): void {
    this.#carry?.release();
    this.#carry = undefined;
    this.#spareData = [];
    this.#spareBounds = [];
    this.#cache.close();
    this.#native.close();
  }

  async *#iterateBatches(
    start: number,
    count: number,
    callSite: Error,
  ): AsyncGenerator<RecordBatch, void, undefined> {
    const carried = this.#takeCarry(start, count);
    if (carried !== undefined) {
      start += carried.length;
      count -= carried.length;
      yield carried;
    }
    const plan = planChunkAlignedRanges(this.chunks, start, count, this.#batchBytes);
    // The last read runs on to the end of its chunk, which is decoded whole anyway: the records
    // past the range are kept for a next range that starts there.
    const last = plan.at(-1);
    const lastChunkEnd = last === undefined ? 0 : this.#chunkEndOf(last[0] + last[1] - 1);
    const extended =
      last !== undefined && lastChunkEnd > last[0] + last[1]
        ? ([last[0], lastChunkEnd - last[0]] as const)
        : undefined;
    // The first read is waited for at once. Over stored chunks (a copy and a checksum) it runs
    // here, on the calling thread, where a hop to the libuv pool and back would only add a thread
    // hand-off: for ranges of a few thousand small records, a third of the CPU time of a worker's
    // read path. Chunks to decompress are decoded on the pool, which keeps the event loop free.
    // Later reads run ahead on the pool while the consumer works on the batch before.
    const firstRange = plan.length === 1 && extended !== undefined ? extended : plan[0];
    let first: NativeReadResult | undefined;
    let pending: Promise<NativeReadResult> | undefined;
    if (firstRange !== undefined) {
      if (this.#allStored(firstRange)) first = this.#readNow(firstRange[0], firstRange[1], callSite);
      else pending = this.#readAhead(firstRange, callSite);
    }
    for (let k = 0; k < plan.length; k++) {
      let result = first ?? (await (pending as Promise<NativeReadResult>));
      first = undefined;
      const range = plan[k] as readonly [number, number];
      const next =
        k + 1 < plan.length ? (k + 2 === plan.length ? (extended ?? plan[k + 1]) : plan[k + 1]) : undefined;
      pending = next === undefined || result.error !== null ? undefined : this.#readAhead(next, callSite);
      if (k === plan.length - 1 && extended !== undefined) {
        const split = this.#splitExtended(result, range);
        if (split !== undefined) {
          if (split.length > 0) yield split;
          return;
        }
        // A fault or skipped chunk in the extended read: read exactly the range instead.
        result = await this.#readNative(range[0], range[1], callSite);
      }
      const batch = this.#toBatch(result, range[0], callSite, false);
      if (batch.length > 0) yield batch;
      if (result.error !== null) throw RecordIOError.fromNative(result.error, callSite);
    }
  }

  /** One past the last record of the chunk holding record `index`. */
  #chunkEndOf(index: number): number {
    let lo = 0;
    let hi = this.chunks.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.chunks[mid] as ChunkInfo;
      if (c.firstRecord + c.numRecords <= index) lo = mid + 1;
      else hi = mid;
    }
    const chunk = this.chunks[lo];
    return chunk === undefined ? 0 : chunk.firstRecord + chunk.numRecords;
  }

  /**
   * The carried records that begin range `[start, start + count)`, as a batch (the rest stays
   * carried); drops a carry that does not begin the range.
   */
  #takeCarry(start: number, count: number): RecordBatch | undefined {
    const carry = this.#carry;
    if (carry === undefined || count === 0) return undefined;
    this.#carry = undefined;
    if (carry.firstRecord !== start) {
      carry.release();
      return undefined;
    }
    if (carry.length <= count) return carry;
    const [head, tail] = splitBatch(carry, count);
    this.#carry = tail;
    return head;
  }

  /**
   * The records of `range` from a clean read that ran on to the end of its chunk; the records past
   * the range become the carry. Undefined when the read met a fault (nothing is kept).
   */
  #splitExtended(result: NativeReadResult, range: readonly [number, number]): RecordBatch | undefined {
    const records = result.bounds.length / 2;
    if (
      result.error !== null ||
      result.skipped.length > 0 ||
      result.firstRecord !== range[0] ||
      records <= range[1]
    ) {
      return undefined;
    }
    const whole = new RecordBatch(result.data, result.bounds, range[0], this.#recycle);
    const [head, tail] = splitBatch(whole, range[1]);
    this.#carry?.release();
    this.#carry = tail;
    return head;
  }

  /** Starts a read whose rejection is handled even if the consumer stops before awaiting it. */
  #readAhead(range: readonly [number, number], callSite: Error): Promise<NativeReadResult> {
    const promise = this.#readNative(range[0], range[1], callSite);
    promise.catch(() => {});
    return promise;
  }

  /** Whether every chunk holding records of `range` is stored uncompressed. */
  #allStored(range: readonly [number, number]): boolean {
    const end = range[0] + range[1];
    for (let i = chunkIndexOf(this.chunks, range[0]); i >= 0 && i < this.chunks.length; i++) {
      const chunk = this.chunks[i] as ChunkInfo;
      if (chunk.firstRecord >= end) break;
      if (chunk.compressor !== 'none') return false;
    }
    return true;
  }

  /** Reads on the calling thread. */
  #readNow(start: number, count: number, callSite: CallSite): NativeReadResult {
    return this.#callNative(callSite, (native, data, bounds) =>
      native.readSync(start, count, this.#skipCorrupt, data, bounds),
    );
  }

  /** Reads on the libuv pool. */
  async #readNative(start: number, count: number, callSite: Error): Promise<NativeReadResult> {
    try {
      return await this.#callNative(callSite, (native, data, bounds) =>
        native.read(start, count, this.#skipCorrupt, data, bounds),
      );
    } catch (error) {
      throw fromThrown(error, callSite, this.path);
    }
  }

  /** Calls the open native reader with the spare buffers of released batches, if any, to decode into. */
  #callNative<T>(
    callSite: CallSite,
    read: (native: NativeReader, data: ArrayBuffer | undefined, bounds: ArrayBuffer | undefined) => T,
  ): T {
    this.checkOpen(callSite);
    try {
      return read(this.#native, this.#spareData.pop(), this.#spareBounds.pop());
    } catch (error) {
      throw fromThrown(error, callSite, this.path);
    }
  }

  /** Records skip-mode faults, and throws the fault in error mode when `throwOnFault`. */
  #toBatch(result: NativeReadResult, start: number, callSite: CallSite, throwOnFault: boolean): RecordBatch {
    let first = start;
    for (const fault of result.skipped) {
      if (!this.#skippedChunks.has(fault.chunk)) {
        this.#skippedChunks.set(fault.chunk, RecordIOError.fromNative(fault, callSite));
        this.#skippedRecords += fault.records;
      }
      // Skipped chunks at the start of the range move the first delivered record past them.
      const chunk = this.chunks[fault.chunk];
      if (chunk !== undefined && chunk.firstRecord <= first && first < chunk.firstRecord + chunk.numRecords) {
        first = chunk.firstRecord + chunk.numRecords;
      }
    }
    if (throwOnFault && result.error !== null) throw RecordIOError.fromNative(result.error, callSite);
    return new RecordBatch(result.data, result.bounds, Math.max(first, result.firstRecord), this.#recycle);
  }

  #checkRange(start: unknown, count: unknown, callSite: CallSite): void {
    checkInteger(start, 'start', 0, Number.MAX_SAFE_INTEGER);
    checkInteger(count, 'count', 0, Number.MAX_SAFE_INTEGER);
    const s = start as number;
    const c = count as number;
    if (s + c > this.numRecords || (c === 0 && s > this.numRecords)) {
      const detail = `records [${s}, ${s + c}) are outside the file's ${this.numRecords} records`;
      throw withCallSite(new RecordIOError('OUT_OF_RANGE', detail, { path: this.path }), callSite);
    }
  }
}
