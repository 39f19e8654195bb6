/**
 * The TypeScript shape of the addon's prefetcher and chunk cache (docs/native-binding.md, "Prefetch
 * and random access"). Internal to @edl/recordio.
 *
 * @packageDocumentation
 */
import type { PrefetcherStats } from '../prefetcher.js';
import type { NativeFault, NativeReader } from './addon-types.js';

/** Options of `createPrefetcher`, already validated by TypeScript. */
export interface NativePrefetcherOptions {
  readonly threads: number;
  readonly batchRecords: number;
  readonly batchBytes: number;
  readonly maxBufferedBytes: number;
  readonly maxBufferedBatches: number;
  readonly maxOpenFiles: number;
  readonly skipCorrupt: boolean;
}

/** A batch of one range, or the error that ended the range (`error` not null, no records). */
export interface NativePrefetchItem {
  readonly rangeId: number;
  /** Batch: file index of its first record. Error: of the first record not delivered. */
  readonly firstRecord: number;
  readonly records: number;
  /** The last item of its range. */
  readonly rangeDone: boolean;
  /** The records' bytes; hand its buffer back with `recycle` once the batch is released. */
  readonly data: Uint8Array;
  readonly bounds: Uint32Array;
  readonly skipped: NativeFault[];
  /** `records` of an error item: records of the range that were not delivered. */
  readonly error: NativeFault | null;
}

/** Counters of a prefetcher: the public {@link PrefetcherStats}, as the addon returns them. */
export type NativePrefetchStats = PrefetcherStats;

export interface NativePrefetcher {
  /** Queues records [start, start + count) of `path`; returns the range id (0, 1, ...). */
  enqueue(path: string, start: number, count: number): number;
  /** No more ranges. */
  end(): void;
  /** The next item, `undefined` when none is ready yet, `null` at the end or after close. */
  tryPop(): NativePrefetchItem | null | undefined;
  /** True when tryPop has something now; else arms `onReady` (one call, main thread). */
  wait(): boolean;
  /** Waits for the next item on a libuv thread (the AsyncWorker alternative to wait()). */
  pull(): Promise<NativePrefetchItem | null>;
  /**
   * Hands back the buffers of a delivered batch (once, when it is released): later batches are
   * assembled into them. Buffers it did not deliver are ignored.
   */
  recycle(data: ArrayBuffer, bounds: ArrayBuffer): void;
  stats(): NativePrefetchStats;
  /** The read-ahead bound and the working threads, clamped natively to the values at creation. */
  setReadAhead(maxBufferedBytes: number, activeThreads: number): void;
  /** Stops the threads and frees the buffers; idempotent. */
  close(): void;
}

export interface NativeChunkCacheStats {
  readonly hits: number;
  readonly misses: number;
  readonly decodes: number;
  readonly evictions: number;
  readonly bytes: number;
  readonly chunks: number;
}

export interface NativeChunkCache {
  /** Record `index` if its chunk is cached (a view that keeps the chunk alive), else undefined. */
  lookup(index: number): Buffer | undefined;
  /** Decodes the chunk of record `index` on the libuv pool (once for concurrent calls). */
  load(index: number): Promise<Buffer>;
  /** Same on the calling thread. */
  getSync(index: number): Buffer;
  stats(): NativeChunkCacheStats;
  close(): void;
}

/** The addon's exports for prefetching and random access. */
export interface NativePrefetchAddon {
  createPrefetcher(options: NativePrefetcherOptions, onReady: () => void): NativePrefetcher;
  openChunkCache(reader: NativeReader, capacityBytes: number): NativeChunkCache;
}
