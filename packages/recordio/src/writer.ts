import { checkInteger, checkNonEmptyString, checkOneOf, checkOptions, expectedMessage } from '@edl/common';
import { checkRecord } from './check-record.js';
import { COMPRESSORS, type CompressorName, compressorId } from './compressor.js';
import { type CallSite, fromThrown, RecordIOError, withCallSite } from './errors.js';
import type { NativeWriter } from './native/addon-types.js';
import { getAddon } from './native/load-addon.js';

/** Options of {@link RecordIOWriter.create}. */
export interface RecordIOWriterOptions {
  /**
   * How chunk payloads are compressed. Default `'snappy'`: it decodes at several GB/s and, because
   * frames that do not shrink are stored as they are, it is never much larger than `'none'`.
   * `'gzip'` is smaller and slower; `'none'` is the fastest to read when disk is not the limit.
   */
  readonly compressor?: CompressorName;
  /**
   * A chunk is flushed before a record whose bytes would push the sum of record bytes in the chunk
   * (length prefixes not counted) over this limit; a larger record gets a chunk of its own, as in
   * the Go writer. Default 1 MiB: the chunk is the unit of decoding, of random access and of loss
   * when a file is damaged, so it should be small, while at 1 MiB the 20-byte header is noise and
   * compression is at full strength (snappy frames are 64 KiB, the gzip window 32 KiB). The Go
   * default of 32 MiB makes most files one chunk, which a reader must decode whole to reach any
   * record.
   */
  readonly maxChunkBytes?: number;
  /** Gzip level 1 (fastest) to 9 (smallest); default 6, the level of Go's compress/gzip. */
  readonly gzipLevel?: number;
}

/** Counts of what a writer has written so far. */
export interface RecordIOWriterStats {
  /** Records accepted. */
  readonly recordsWritten: number;
  /** Chunks flushed to the file. */
  readonly chunksWritten: number;
  /** Bytes written to the file (headers included). */
  readonly bytesWritten: number;
}

/** Records to write in one call: views or strings, or one buffer plus `[begin, end)` offsets. */
export type RecordBatchInput =
  | readonly (Uint8Array | string)[]
  | { readonly data: Uint8Array; readonly bounds: Uint32Array };

const OPTION_KEYS = ['compressor', 'maxChunkBytes', 'gzipLevel'] as const;
const DEFAULT_MAX_CHUNK_BYTES = 1024 * 1024;
const DEFAULT_GZIP_LEVEL = 6;
/** A chunk's compressed size is a uint32 in its header. */
const MAX_CHUNK_BYTES = 2 ** 32 - 1;
const encoder = new TextEncoder();

/**
 * Writes a RecordIO file readable by the Go reader and by {@link RecordIOReader}. Strings are written
 * as their UTF-8 bytes. Snappy payloads are proper 64 KiB frames (the Go writer emits one frame per
 * record, which makes its files larger than uncompressed ones).
 *
 * @example
 * ```ts
 * const writer = await RecordIOWriter.create('out.rio', { compressor: 'gzip' });
 * writer.write('first record');
 * writer.write(new Uint8Array([1, 2, 3]));
 * writer.close();
 * ```
 */
export class RecordIOWriter implements Disposable, AsyncDisposable {
  /** The file written. */
  readonly path: string;
  /** The compressor of every chunk. */
  readonly compressor: CompressorName;
  /** The chunk size limit in record bytes. */
  readonly maxChunkBytes: number;
  readonly #native: NativeWriter;
  #finalStats: RecordIOWriterStats | undefined;

  private constructor(path: string, native: NativeWriter, compressor: CompressorName, maxChunkBytes: number) {
    this.path = path;
    this.#native = native;
    this.compressor = compressor;
    this.maxChunkBytes = maxChunkBytes;
  }

  /**
   * Creates (or truncates) `path` for writing.
   *
   * @throws TypeError / RangeError for bad arguments; RecordIOError `IO` when the file cannot be created.
   */
  static async create(path: string, options?: RecordIOWriterOptions): Promise<RecordIOWriter> {
    return RecordIOWriter.#create(path, options, RecordIOWriter.create);
  }

  /** Synchronous {@link RecordIOWriter.create}. */
  static createSync(path: string, options?: RecordIOWriterOptions): RecordIOWriter {
    return RecordIOWriter.#create(path, options, RecordIOWriter.createSync);
  }

  static #create(path: unknown, options: unknown, callSite: CallSite): RecordIOWriter {
    const file = checkNonEmptyString(path, 'path');
    const opts = checkOptions(options, 'options', OPTION_KEYS);
    const compressor =
      opts.compressor === undefined
        ? 'snappy'
        : checkOneOf(opts.compressor, 'options.compressor', COMPRESSORS);
    const maxChunkBytes =
      opts.maxChunkBytes === undefined
        ? DEFAULT_MAX_CHUNK_BYTES
        : checkInteger(opts.maxChunkBytes, 'options.maxChunkBytes', 1, MAX_CHUNK_BYTES);
    const gzipLevel =
      opts.gzipLevel === undefined
        ? DEFAULT_GZIP_LEVEL
        : checkInteger(opts.gzipLevel, 'options.gzipLevel', 1, 9);
    let native: NativeWriter;
    try {
      native = getAddon().createWriter(file, compressorId(compressor), maxChunkBytes, gzipLevel);
    } catch (error) {
      throw fromThrown(error, callSite, file);
    }
    return new RecordIOWriter(file, native, compressor, maxChunkBytes);
  }

  /** Whether {@link RecordIOWriter.close} was called. */
  get closed(): boolean {
    return this.#finalStats !== undefined;
  }

  /** Records accepted so far. */
  get recordsWritten(): number {
    return this.stats.recordsWritten;
  }

  /** What was written so far (final figures after close). */
  get stats(): RecordIOWriterStats {
    if (this.#finalStats !== undefined) return this.#finalStats;
    const n = this.#native;
    return { recordsWritten: n.recordsWritten, chunksWritten: n.chunksWritten, bytesWritten: n.bytesWritten };
  }

  /** Appends one record (copied; the caller may reuse its buffer). */
  write(record: Uint8Array | string): void {
    const value = checkRecord(record, 'record');
    this.#call(this.write, () =>
      this.#native.write(typeof value === 'string' ? encoder.encode(value) : value),
    );
  }

  /**
   * Appends many records in one call into the addon: an array of records, or one buffer with
   * `[begin, end)` offsets (a {@link RecordBatch} is one, so batches copy from file to file
   * without a per-record call).
   */
  writeBatch(records: RecordBatchInput): void {
    const { data, bounds } = packBatch(records);
    if (bounds.length === 0) return;
    this.#call(this.writeBatch, () => this.#native.writeBatch(data, bounds));
  }

  /** Flushes the last chunk and closes the file. Idempotent. */
  close(): void {
    if (this.#finalStats !== undefined) return;
    const callSite = this.close;
    const stats = this.stats;
    try {
      this.#native.close();
    } catch (error) {
      throw fromThrown(error, callSite, this.path);
    }
    const n = this.#native;
    this.#finalStats = Object.freeze({
      recordsWritten: stats.recordsWritten,
      chunksWritten: n.chunksWritten,
      bytesWritten: n.bytesWritten,
    });
  }

  /** Same as {@link RecordIOWriter.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** Same as {@link RecordIOWriter.close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  #call(api: (...args: never[]) => unknown, fn: () => void): void {
    if (this.#finalStats !== undefined) {
      const error = new RecordIOError('CLOSED', 'the writer is closed', { path: this.path });
      throw withCallSite(error, api);
    }
    try {
      fn();
    } catch (error) {
      throw fromThrown(error, api, this.path);
    }
  }
}

/** Validates a batch and brings it to one buffer plus offsets. */
function packBatch(records: unknown): { data: Uint8Array; bounds: Uint32Array } {
  if (Array.isArray(records)) {
    const parts = records.map((r, i) => {
      const value = checkRecord(r, `records[${i}]`);
      return typeof value === 'string' ? encoder.encode(value) : value;
    });
    const total = parts.reduce((sum, p) => sum + p.byteLength, 0);
    const data = new Uint8Array(total);
    const bounds = new Uint32Array(parts.length * 2);
    let at = 0;
    parts.forEach((p, i) => {
      data.set(p, at);
      bounds[2 * i] = at;
      at += p.byteLength;
      bounds[2 * i + 1] = at;
    });
    return { data, bounds };
  }
  const batch = records as { data?: unknown; bounds?: unknown } | null;
  if (
    batch === null ||
    typeof batch !== 'object' ||
    !(batch.data instanceof Uint8Array) ||
    !(batch.bounds instanceof Uint32Array)
  ) {
    throw new TypeError(
      expectedMessage('an array of records or { data: Uint8Array, bounds: Uint32Array }', 'records', records),
    );
  }
  const { data, bounds } = batch as { data: Uint8Array; bounds: Uint32Array };
  if (bounds.length % 2 !== 0) {
    throw new RangeError(expectedMessage('an even number of offsets', 'records.bounds', bounds));
  }
  for (let i = 0; i < bounds.length; i += 2) {
    const begin = bounds[i] as number;
    const end = bounds[i + 1] as number;
    if (begin > end || end > data.byteLength) {
      // The pair itself is the useful "received" value, so the message is built here.
      throw new RangeError(
        `Expected offsets within the ${data.byteLength} bytes of data for records.bounds[${i}..${i + 1}] ` +
          `but received [${begin}, ${end})`,
      );
    }
  }
  return { data, bounds };
}
