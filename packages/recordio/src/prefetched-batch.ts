import type { RecordIOError } from './errors.js';
import type { PrefetchRange } from './prefetch-error.js';
import { type BatchRecycler, RecordBatch } from './record-batch.js';

/**
 * A {@link RecordBatch} delivered by a {@link Prefetcher}: consecutive records of one range, tagged
 * with that range and the batch's position in it. Its bytes are the native buffer itself (no copy);
 * `release()` hands that buffer back to the prefetcher, whose threads assemble a later batch into it.
 */
export class PrefetchedBatch extends RecordBatch {
  /** The range the records belong to. */
  readonly range: PrefetchRange;
  /** Index within the range of the first record (`firstRecord - range.start`). */
  readonly offset: number;
  /** Whether this is the last batch of its range (an empty batch can carry this alone). */
  readonly rangeDone: boolean;
  /** `onCorruptChunk: 'skip'`: chunks of the range passed over just before these records. */
  readonly skipped: readonly RecordIOError[];

  /**
   * @param data - the decoded bytes.
   * @param bounds - `[begin, end)` pairs into `data`.
   * @param firstRecord - file index of the first record.
   * @param range - the range the records belong to.
   * @param rangeDone - last batch of the range.
   * @param skipped - chunks passed over before these records.
   * @param recycle - where `release()` hands the buffers back (the prefetcher's threads assemble
   * later batches into them).
   */
  constructor(
    data: Uint8Array,
    bounds: Uint32Array,
    firstRecord: number,
    range: PrefetchRange,
    rangeDone: boolean,
    skipped: readonly RecordIOError[],
    recycle?: BatchRecycler,
  ) {
    super(data, bounds, firstRecord, recycle);
    this.range = range;
    this.offset = firstRecord - range.start;
    this.rangeDone = rangeDone;
    this.skipped = skipped;
  }
}
