import { checkBoolean, checkInteger, checkNumber, checkOptions, invalidArgument } from '@edl/common';
import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { copyState, expectStateObject, stateArray, stateCount, stateObject } from '../state.js';
import { type NumericSequence, padRows } from './padded-batch.js';

/** Options of `bucketBySequenceLength`. */
export interface BucketOptions {
  /** The value padding is filled with (default 0). */
  readonly paddingValue?: number;
  /** Pad a bucket's rows to its upper boundary minus one instead of to its longest row (default false). */
  readonly padToBucketBoundary?: boolean;
  /** Drop the partial batches left in the buckets at the end (default false). */
  readonly dropRemainder?: boolean;
}

/** The bucketing arguments, checked. */
export interface BucketSpec {
  readonly boundaries: readonly number[];
  readonly batchSizes: readonly number[];
  readonly paddingValue: number;
  readonly padToBucketBoundary: boolean;
  readonly dropRemainder: boolean;
}

/**
 * Checks `bucketBySequenceLength` arguments: increasing positive `boundaries` and one batch size per
 * bucket (`boundaries.length + 1`), as tf.data requires.
 */
export function resolveBucketSpec(
  boundaries: readonly number[],
  batchSizes: readonly number[],
  options: BucketOptions | undefined,
): BucketSpec {
  if (!Array.isArray(boundaries))
    invalidArgument('an array of increasing positive integers', 'boundaries', boundaries);
  boundaries.forEach((b, k) => {
    checkInteger(b, `boundaries[${k}]`, k === 0 ? 1 : boundaries[k - 1]! + 1);
  });
  if (!Array.isArray(batchSizes) || batchSizes.length !== boundaries.length + 1) {
    invalidArgument(`an array of ${boundaries.length + 1} batch sizes`, 'batchSizes', batchSizes);
  }
  batchSizes.forEach((size, k) => {
    checkInteger(size, `batchSizes[${k}]`, 1);
  });
  const o = checkOptions(options, 'options', ['paddingValue', 'padToBucketBoundary', 'dropRemainder']);
  return {
    boundaries: [...boundaries],
    batchSizes: [...batchSizes],
    paddingValue: o.paddingValue === undefined ? 0 : checkNumber(o.paddingValue, 'options.paddingValue'),
    padToBucketBoundary: checkBoolean(o.padToBucketBoundary, 'options.padToBucketBoundary', false),
    dropRemainder: checkBoolean(o.dropRemainder, 'options.dropRemainder', false),
  };
}

interface Entry {
  /** Number of the read that gave this element, counted by this iterator. */
  readonly seq: number;
  /** The parent's state before this element. */
  readonly start: JsonObject;
  readonly value: NumericSequence;
}

/**
 * `IterDataset.bucketBySequenceLength`: tf.data's `bucket_by_sequence_length`. An element of length
 * `n` goes to the first bucket `b` with `n < boundaries[b]` (the last bucket takes the rest); when a
 * bucket holds `batchSizes[b]` elements they are returned as one padded batch. At the end the partial
 * buckets are returned in bucket order (unless `dropRemainder`).
 *
 * State: `{ parent, read, counts }`: the parent's state before the oldest buffered element, the
 * number of elements read since then, and how many elements each bucket holds. No element is saved: a
 * restore re-reads those `read` elements and keeps, per bucket, the last `counts[b]` that fell in it
 * (the earlier ones were returned already). The replay costs the elements read since the oldest
 * buffered one, which a rarely filled bucket makes long.
 */
export class BucketBySequenceLengthIterator extends DatasetIteratorBase<number[][]> {
  readonly #parent: DatasetIterator<NumericSequence>;
  readonly #spec: BucketSpec;
  #buckets: Entry[][];
  #reads = 0;
  /** A restored state whose buffered elements are not re-read yet. */
  #pending: { read: number; counts: number[]; state: JsonObject } | undefined;

  constructor(parent: DatasetIterator<NumericSequence>, spec: BucketSpec) {
    super();
    this.#parent = parent;
    this.#spec = spec;
    this.#buckets = spec.batchSizes.map(() => []);
  }

  protected async advance(): Promise<IteratorResult<number[][]>> {
    if (this.#pending !== undefined) await this.#replay(this.#pending);
    for (;;) {
      const start = this.#parent.getState();
      const result = await this.#parent.next();
      if (result.done) return this.#flush();
      const b = this.#add(start, result.value);
      if (this.#buckets[b]!.length === this.#spec.batchSizes[b]) return this.#emit(b);
    }
  }

  /** Buffers an element in its bucket and returns the bucket. */
  #add(start: JsonObject, value: NumericSequence): number {
    const { boundaries, padToBucketBoundary } = this.#spec;
    let b = boundaries.findIndex((boundary) => value.length < boundary);
    if (b < 0) {
      if (padToBucketBoundary) {
        throw new DatasetError(
          'ERR_BAD_ELEMENT',
          `${this}: an element of length ${value.length} is not below the last boundary ${boundaries.at(-1)}, required with padToBucketBoundary`,
        );
      }
      b = boundaries.length;
    }
    this.#buckets[b]!.push({ seq: this.#reads++, start, value });
    return b;
  }

  #emit(b: number): IteratorResult<number[][]> {
    const entries = this.#buckets[b]!;
    this.#buckets[b] = [];
    const { boundaries, padToBucketBoundary, paddingValue } = this.#spec;
    const length = padToBucketBoundary ? boundaries[b]! - 1 : undefined;
    const rows = entries.map((entry) => entry.value);
    return { done: false, value: padRows(rows, length, paddingValue, String(this)) };
  }

  #flush(): IteratorResult<number[][]> {
    if (this.#spec.dropRemainder) {
      this.#buckets = this.#buckets.map(() => []);
      return DONE;
    }
    const b = this.#buckets.findIndex((bucket) => bucket.length > 0);
    return b < 0 ? DONE : this.#emit(b);
  }

  async #replay(pending: { read: number; counts: number[] }): Promise<void> {
    for (let i = 0; i < pending.read; i++) {
      const start = this.#parent.getState();
      const result = await this.#parent.next();
      if (result.done) break;
      const b = this.#add(start, result.value);
      // Elements past the saved count of their bucket were returned before the checkpoint.
      if (this.#buckets[b]!.length > pending.counts[b]!) this.#buckets[b]!.shift();
    }
    this.#buckets.forEach((bucket, b) => {
      if (bucket.length !== pending.counts[b]) {
        throw new DatasetError(
          'ERR_BAD_STATE',
          `Expected ${pending.counts[b]} elements in bucket ${b} of ${this} after replaying the state but found ${bucket.length}`,
        );
      }
    });
    this.#pending = undefined;
  }

  getState(): JsonObject {
    if (this.#pending !== undefined) {
      const { state, read, counts } = this.#pending;
      return { parent: copyState(state), read, counts: [...counts] };
    }
    let oldest: Entry | undefined;
    for (const bucket of this.#buckets) {
      const head = bucket[0];
      if (head !== undefined && (oldest === undefined || head.seq < oldest.seq)) oldest = head;
    }
    return {
      parent: oldest === undefined ? this.#parent.getState() : copyState(oldest.start),
      read: oldest === undefined ? 0 : this.#reads - oldest.seq,
      counts: this.#buckets.map((bucket) => bucket.length),
    };
  }

  protected restore(state: JsonObject): void {
    const owner = 'BucketBySequenceLength';
    const checked = expectStateObject(state, owner);
    const parentState = stateObject(checked, 'parent', owner);
    const read = stateCount(checked, 'read', owner);
    const counts = stateArray(checked, 'counts', owner, this.#buckets.length).map((count, b) =>
      stateCount({ count }, 'count', `${owner} bucket ${b}`),
    );
    this.#parent.setState(parentState);
    this.#buckets = this.#buckets.map(() => []);
    this.#reads = 0;
    this.#pending = read === 0 ? undefined : { read, counts, state: copyState(parentState) };
  }

  toString(): string {
    return `${this.#parent} -> BucketBySequenceLength([${this.#spec.boundaries.join(', ')}], [${this.#spec.batchSizes.join(', ')}])`;
  }
}
