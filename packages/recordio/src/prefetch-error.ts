import { RecordIOError, withCallSite } from './errors.js';
import type { NativeFault } from './native/addon-types.js';

/** A range handed to {@link Prefetcher.enqueue}, with the id it was given. */
export interface PrefetchRange {
  /** 0, 1, 2, ... in enqueue order. */
  readonly id: number;
  readonly path: string;
  /** First record of the range in the file. */
  readonly start: number;
  /** Records in the range. */
  readonly count: number;
}

/**
 * The fault that ended one range of a {@link Prefetcher}: a RecordIOError (same `code`, `path`,
 * `chunk`, `offset`) that also names the range and where in it delivery stopped. Every record of the
 * range before `position` was delivered; the other ranges go on.
 */
export class PrefetchRangeError extends RecordIOError {
  /** The range that failed. */
  readonly range: PrefetchRange;
  /** Records of the range delivered before the fault (the first one not delivered, within it). */
  readonly position: number;
  /** Records of the range that were not delivered. */
  readonly undelivered: number;

  /**
   * @param fault - the native fault (`records`: undelivered records of the range).
   * @param range - the range it ended.
   * @param firstRecord - file index of the first record not delivered.
   */
  constructor(fault: NativeFault, range: PrefetchRange, firstRecord: number) {
    const base = RecordIOError.fromNative(fault);
    super(
      base.code,
      `${base.detail} (range ${range.id}: records [${range.start}, ${range.start + range.count}), stopped at record ${firstRecord})`,
      {
        path: base.path,
        chunk: base.chunk,
        offset: base.offset,
        records: fault.records,
      },
    );
    this.range = range;
    this.position = firstRecord - range.start;
    this.undelivered = fault.records;
  }
}

/** A RecordIOError for a chunk skipped in `onCorruptChunk: 'skip'` mode, with the caller's stack. */
export function skippedFault(fault: NativeFault, callSite: Error | undefined): RecordIOError {
  return withCallSite(RecordIOError.fromNative(fault), callSite);
}
