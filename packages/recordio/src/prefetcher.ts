import { availableParallelism } from 'node:os';
import { checkInteger, checkNonEmptyString, checkOneOf, checkOptions } from '@edl/common';
import { captureCallSite, fromThrown, RecordIOError, withCallSite } from './errors.js';
import { getAddon } from './native/load-addon.js';
import type { NativePrefetcher, NativePrefetchItem, NativePrefetchStats } from './native/prefetch-types.js';
import { type PrefetchRange, PrefetchRangeError, skippedFault } from './prefetch-error.js';
import { PrefetchedBatch } from './prefetched-batch.js';
import type { BatchRecycler } from './record-batch.js';

/** Options of {@link Prefetcher.create}. */
export interface PrefetcherOptions {
  /**
   * Decoding threads. Default: 2, or 1 on a one-core machine. `0` decodes on the JavaScript thread
   * when a batch is asked for (no read-ahead: the baseline the benchmarks compare with). Also the
   * most that {@link Prefetcher.setReadAhead} may make active: a tuner starts with all it may use.
   */
  readonly threads?: number;
  /** Records per batch (the last batch of a range may be shorter). Default 64. */
  readonly batchSize?: number;
  /**
   * Decoded bytes held ahead of the consumer — ready batches plus chunks decoded or being decoded.
   * Threads stop when it is reached (backpressure). Default 64 MiB. Exact for stored chunks; for
   * compressed ones a chunk is admitted on an estimate of its decoded size, so the peak can pass it
   * by the estimate's error on the chunks in flight. Also the most {@link Prefetcher.setReadAhead}
   * may set.
   */
  readonly maxBufferedBytes?: number;
  /** Record bytes per batch at most (a larger record gets a batch alone). Default 64 MiB. */
  readonly maxBatchBytes?: number;
  /** Ready batches held ahead of the consumer. Default 64. */
  readonly maxBufferedBatches?: number;
  /** Files kept open (descriptor and chunk index) for reuse. Default 16. */
  readonly maxOpenFiles?: number;
  /**
   * `'error'` (default): a corrupt chunk ends its range with a {@link PrefetchRangeError} after the
   * records before it; `'skip'`: it is passed over and listed in the next batch's `skipped`.
   */
  readonly onCorruptChunk?: 'error' | 'skip';
  /**
   * How a waiting consumer is woken: `'notify'` (default), a ThreadSafeFunction call from the
   * decoding thread; `'worker'`, one AsyncWorker per wait blocking a libuv thread. Both are kept so
   * that bench/get-batch.mjs can compare them; `threads: 0` always uses `'notify'`.
   */
  readonly wakeup?: 'notify' | 'worker';
}

/** Counters of a {@link Prefetcher}; `bufferedBytes` never exceeds `maxBufferedBytes` (see there). */
export interface PrefetcherStats {
  /** Decoded bytes held ahead of the consumer now. */
  readonly bufferedBytes: number;
  /** The most ever held. */
  readonly peakBufferedBytes: number;
  /** Ready batches now, and the most ever. */
  readonly bufferedBatches: number;
  readonly peakBufferedBatches: number;
  readonly rangesEnqueued: number;
  /** Ranges whose last batch (or error) is ready or delivered. */
  readonly rangesDone: number;
  /** Batches and errors handed to JavaScript. */
  readonly batchesDelivered: number;
  /** Units of decoding (consecutive chunks of about 1 MiB stored). */
  readonly piecesDecoded: number;
  /** Files open now, and opened so far. */
  readonly openFiles: number;
  readonly fileOpens: number;
  /** Batches assembled into the memory of batches handed back with `release()`. */
  readonly batchesRecycled: number;
  /** Blocks of released batches (data and bounds) waiting to be reused now. */
  readonly spareBlocks: number;
  /** Threads started (the `threads` option), and those parked now (see {@link Prefetcher.setReadAhead}). */
  readonly threads: number;
  readonly parkedThreads: number;
  /** Threads working now and the read-ahead bound now (see {@link Prefetcher.setReadAhead}). */
  readonly activeThreads: number;
  readonly maxBufferedBytes: number;
  /**
   * Time the threads spent reading and decoding, summed over threads, in nanoseconds, and the
   * bytes (records and bounds) they decoded in that time: decoded, not yet delivered, included.
   */
  readonly decodeNanoseconds: number;
  readonly decodedBytes: number;
  /**
   * Ranges that started inside the chunk the range before them ended in, of the same file, and
   * took their first records from that decoded chunk instead of decoding it a second time.
   */
  readonly chunksCarried: number;
}

const OPTION_KEYS = [
  'threads',
  'batchSize',
  'maxBufferedBytes',
  'maxBatchBytes',
  'maxBufferedBatches',
  'maxOpenFiles',
  'onCorruptChunk',
  'wakeup',
] as const;
const RANGE_KEYS = ['path', 'start', 'count'] as const;
const MIB = 1024 * 1024;
/** Bytes delivered without a turn of the event loop before the prefetcher yields one. */
const YIELD_BYTES = 8 * MIB;
/** Batches cross into JavaScript with uint32 offsets. */
const MAX_BATCH_BYTES = 2 ** 32 - 1 - 2 ** 24;

/** Where onReady finds the consumer waiting; holds nothing else, so it keeps nothing alive. */
interface WakeSlot {
  wake: (() => void) | undefined;
}

/**
 * Reads record ranges ahead of the consumer on native threads, into a ring of batches bounded in
 * bytes and in batches. A range is exactly what a task names: a file, a first record and a count.
 * Batches come out in enqueue order, each from one range and tagged with it, whatever the number of
 * threads (the output is the same for 1 or N). A range that fails yields what came before the
 * fault, then a {@link PrefetchRangeError}; the other ranges are not affected.
 *
 * @example
 * ```ts
 * await using prefetcher = Prefetcher.create({ threads: 2, batchSize: 64 });
 * prefetcher.enqueue({ path: 'train-0.rio', start: 0, count: 4096 });
 * prefetcher.end(); // no more ranges: iteration ends after the last batch
 * for await (const batch of prefetcher) train(batch); // PrefetchedBatch: batch.range, batch.offset
 * ```
 */
export class Prefetcher implements AsyncIterableIterator<PrefetchedBatch>, AsyncDisposable {
  /** Decoding threads (0: decoding happens in `next()`). */
  readonly threads: number;
  readonly #native: NativePrefetcher;
  readonly #slot: WakeSlot;
  readonly #worker: boolean;
  readonly #ranges = new Map<number, PrefetchRange>();
  readonly #callSite: Error;
  #tail: Promise<unknown> = Promise.resolve();
  #closed = false;
  #ended = false;
  #lastStats: NativePrefetchStats | undefined;
  /** Bytes handed out since the event loop last turned. */
  #unyielded = 0;
  /** Released batches' buffers go back to the native threads (dropped after close). */
  readonly #recycle: BatchRecycler = (data, bounds) => {
    if (this.#closed || !(data instanceof ArrayBuffer) || !(bounds instanceof ArrayBuffer)) return;
    this.#native.recycle(data, bounds);
  };

  private constructor(
    native: NativePrefetcher,
    slot: WakeSlot,
    threads: number,
    worker: boolean,
    callSite: Error,
  ) {
    this.#native = native;
    this.#slot = slot;
    this.threads = threads;
    this.#worker = worker;
    this.#callSite = callSite;
  }

  /**
   * Starts a prefetcher (its threads wait for ranges).
   *
   * @throws TypeError / RangeError for bad options; RecordIOError `IO` when threads cannot start.
   */
  static create(options?: PrefetcherOptions): Prefetcher {
    const opts = checkOptions(options, 'options', OPTION_KEYS);
    const int = (key: (typeof OPTION_KEYS)[number], fallback: number, min: number, max: number): number =>
      opts[key] === undefined ? fallback : checkInteger(opts[key], `options.${key}`, min, max);
    const threads = int('threads', availableParallelism() > 1 ? 2 : 1, 0, 64);
    const batchSize = int('batchSize', 64, 1, 2 ** 32 - 1);
    const maxBufferedBytes = int('maxBufferedBytes', 64 * MIB, 1, Number.MAX_SAFE_INTEGER);
    const maxBatchBytes = int('maxBatchBytes', 64 * MIB, 1, MAX_BATCH_BYTES);
    const maxBufferedBatches = int('maxBufferedBatches', 64, 1, 2 ** 32 - 1);
    const maxOpenFiles = int('maxOpenFiles', 16, 1, 100_000);
    const onCorruptChunk =
      opts.onCorruptChunk === undefined
        ? 'error'
        : checkOneOf(opts.onCorruptChunk, 'options.onCorruptChunk', ['error', 'skip'] as const);
    const wakeup =
      opts.wakeup === undefined
        ? 'notify'
        : checkOneOf(opts.wakeup, 'options.wakeup', ['notify', 'worker'] as const);
    const slot: WakeSlot = { wake: undefined };
    const onReady = (): void => {
      const wake = slot.wake;
      slot.wake = undefined;
      wake?.();
    };
    let native: NativePrefetcher;
    try {
      const addon = getAddon();
      native = addon.createPrefetcher(
        {
          threads,
          batchRecords: batchSize,
          batchBytes: maxBatchBytes,
          maxBufferedBytes,
          maxBufferedBatches,
          maxOpenFiles,
          skipCorrupt: onCorruptChunk === 'skip',
        },
        onReady,
      );
    } catch (error) {
      throw fromThrown(error, Prefetcher.create);
    }
    return new Prefetcher(
      native,
      slot,
      threads,
      wakeup === 'worker' && threads > 0,
      captureCallSite(Prefetcher.create),
    );
  }

  /**
   * Queues records `[start, start + count)` of `path` (read after every range queued before).
   * The file is opened and checked on a prefetch thread: a missing file or a range outside it
   * comes back as a {@link PrefetchRangeError} in its turn, not from here.
   *
   * @returns the range, with its id.
   * @throws RecordIOError `CLOSED` after {@link Prefetcher.close} or {@link Prefetcher.end}.
   */
  enqueue(range: { readonly path: string; readonly start: number; readonly count: number }): PrefetchRange {
    const r = checkOptions(range, 'range', RANGE_KEYS);
    const path = checkNonEmptyString(r.path, 'range.path');
    const start = checkInteger(r.start, 'range.start', 0, Number.MAX_SAFE_INTEGER);
    const count = checkInteger(r.count, 'range.count', 0, Number.MAX_SAFE_INTEGER - start);
    if (this.#closed || this.#ended) {
      const why = this.#closed ? 'the prefetcher is closed' : 'end() was called: no more ranges';
      throw withCallSite(new RecordIOError('CLOSED', why, { path }), this.enqueue);
    }
    let id: number;
    try {
      id = this.#native.enqueue(path, start, count);
    } catch (error) {
      throw fromThrown(error, this.enqueue, path);
    }
    const entry: PrefetchRange = { id, path, start, count };
    this.#ranges.set(id, entry);
    return entry;
  }

  /** No more ranges: iteration ends once every queued range is delivered. Idempotent. */
  end(): void {
    if (this.#ended || this.#closed) return;
    this.#ended = true;
    this.#native.end();
  }

  /**
   * Changes the read-ahead while reading (what a tuner sets): the decoded-bytes bound and the
   * threads that work, each clamped to `[1, the value given to create]` (with `threads: 0` nothing
   * changes but the bound). Threads above `activeThreads` park once their current piece is done;
   * a lower bound only stops new reads, what is read stays until consumed. The batches, their
   * records and their order do not change. A no-op after close.
   *
   * @throws TypeError / RangeError for a value that is not a positive integer.
   */
  setReadAhead(settings: { readonly maxBufferedBytes: number; readonly activeThreads: number }): void {
    const o = checkOptions(settings, 'settings', ['maxBufferedBytes', 'activeThreads']);
    const bytes = checkInteger(o.maxBufferedBytes, 'settings.maxBufferedBytes', 1, Number.MAX_SAFE_INTEGER);
    const active = checkInteger(o.activeThreads, 'settings.activeThreads', 1, 64);
    if (this.#closed) return;
    this.#native.setReadAhead(bytes, active);
  }

  /** Whether {@link Prefetcher.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /** Counters (the last ones seen before close, after it). */
  get stats(): PrefetcherStats {
    return this.#closed ? (this.#lastStats as NativePrefetchStats) : this.#native.stats();
  }

  /**
   * The next batch. Rejects with a {@link PrefetchRangeError} when a range ends with a fault; call
   * `next()` again (or iterate again) to go on with the following ranges. Done after
   * {@link Prefetcher.end} once everything is delivered, or after close. Concurrent calls are
   * served in order.
   */
  next(): Promise<IteratorResult<PrefetchedBatch, undefined>> {
    const result = this.#tail.then(() => this.#next());
    this.#tail = result.catch(() => {});
    return result;
  }

  /** Ends iteration; does not close (ranges queued stay queued: call close() or use `await using`). */
  async return(): Promise<IteratorResult<PrefetchedBatch, undefined>> {
    return { done: true, value: undefined };
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /**
   * Stops the threads and frees every buffer not yet delivered; a pending `next()` resolves done.
   * Batches already delivered stay valid. Idempotent.
   */
  close(): void {
    if (this.#closed) return;
    this.#lastStats = this.#native.stats();
    this.#closed = true;
    this.#native.close();
    this.#ranges.clear();
    const wake = this.#slot.wake;
    this.#slot.wake = undefined;
    wake?.();
  }

  /** Same as {@link Prefetcher.close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  async #next(): Promise<IteratorResult<PrefetchedBatch, undefined>> {
    const item = await this.#nextItem();
    if (item === null) return { done: true, value: undefined };
    const range = this.#ranges.get(item.rangeId);
    if (range === undefined) return { done: true, value: undefined }; // closed meanwhile
    if (item.rangeDone) this.#ranges.delete(item.rangeId);
    if (item.error !== null) {
      throw withCallSite(new PrefetchRangeError(item.error, range, item.firstRecord), this.#callSite);
    }
    const skipped = item.skipped.map((fault) => skippedFault(fault, this.#callSite));
    return {
      done: false,
      value: new PrefetchedBatch(
        item.data,
        item.bounds,
        item.firstRecord,
        range,
        item.rangeDone,
        skipped,
        this.#recycle,
      ),
    };
  }

  async #nextItem(): Promise<NativePrefetchItem | null> {
    for (;;) {
      if (this.#closed) return null;
      if (this.#worker) return this.#native.pull();
      if (this.#unyielded >= YIELD_BYTES) {
        // Batches dropped by the consumer are freed by N-API finalizers, which run only when the
        // event loop turns. A ring that is always ready (or threads: 0) would never let it turn,
        // and memory would grow by every batch delivered.
        this.#unyielded = 0;
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
      const item = this.#native.tryPop();
      if (item !== undefined) {
        if (item !== null) this.#unyielded += item.data.byteLength + item.bounds.byteLength;
        return item;
      }
      this.#unyielded = 0;
      await new Promise<void>((resolve) => {
        this.#slot.wake = resolve;
        if (this.#native.wait()) {
          this.#slot.wake = undefined;
          resolve();
        }
      });
    }
  }
}
