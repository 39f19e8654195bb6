import { expectedMessage } from '@edl/common';

/**
 * Takes back the buffers of a released batch for a later read to decode into (see
 * {@link RecordBatch.release}).
 */
export type BatchRecycler = (data: ArrayBufferLike, bounds: ArrayBufferLike) => void;

const NO_DATA = new Uint8Array(0);
const NO_BOUNDS = new Uint32Array(0);

/**
 * Consecutive records delivered by one read: one buffer (`data`) plus `[begin, end)` offsets
 * (`bounds`), as they came from the native decoder. `get(i)` returns a view into `data`, never a
 * copy, so a record stays valid as long as something references it (or the batch) — until
 * {@link RecordBatch.release} is called, if it ever is.
 *
 * Zero-copy consumers can use `data` and `bounds` directly: record `i` is
 * `data.subarray(bounds[2 * i], bounds[2 * i + 1])`.
 */
export class RecordBatch implements Iterable<Uint8Array> {
  /** Index in the file of the first record (in skip mode the indices after a skipped chunk jump). */
  readonly firstRecord: number;
  #data: Uint8Array;
  #bounds: Uint32Array;
  #length: number;
  #recycle: BatchRecycler | undefined;
  #released = false;

  /**
   * @param data - the bytes the records live in.
   * @param bounds - `[begin, end)` pairs into `data`, two per record.
   * @param firstRecord - index in the file of the first record.
   * @param recycle - where {@link RecordBatch.release} hands the buffers back (readers pass their
   * buffer pool); without it `release()` only drops the batch's references.
   */
  constructor(data: Uint8Array, bounds: Uint32Array, firstRecord: number, recycle?: BatchRecycler) {
    if (bounds.length % 2 !== 0) {
      throw new RangeError(expectedMessage('an even number of offsets', 'bounds', bounds));
    }
    // A plain Uint8Array view: Buffer.prototype.subarray is slower per call than Uint8Array's.
    this.#data =
      Object.getPrototypeOf(data) === Uint8Array.prototype
        ? data
        : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.#bounds = bounds;
    this.firstRecord = firstRecord;
    this.#length = bounds.length / 2;
    this.#recycle = recycle;
  }

  /** The decoded bytes; records are views into it. Empty after {@link RecordBatch.release}. */
  get data(): Uint8Array {
    return this.#data;
  }

  /** Two offsets per record into `data`: begin, end. Empty after {@link RecordBatch.release}. */
  get bounds(): Uint32Array {
    return this.#bounds;
  }

  /** Number of records (0 after {@link RecordBatch.release}). */
  get length(): number {
    return this.#length;
  }

  /** Whether {@link RecordBatch.release} was called. */
  get released(): boolean {
    return this.#released;
  }

  /**
   * Declares the batch done with: its buffers go back to the reader that made it, and its next
   * read decodes into them instead of into fresh memory. This is what keeps a `readSync` loop (or
   * a `batches()` consumer) at a constant footprint without waiting for garbage collection: without
   * it a batch's memory is only reclaimed after V8 collects it *and* the event loop turns.
   *
   * After `release()` the batch is empty, and **every view taken from it (`get(i)`, iteration,
   * `data`, `data.subarray(...)`) may be overwritten by a later read**: copy what must outlive
   * it first. Idempotent. Batches from `records()` are never released by the library, so the
   * records it yields stay valid as long as they are referenced.
   */
  release(): void {
    if (this.#released) return;
    this.#released = true;
    const data = this.#data.buffer;
    const bounds = this.#bounds.buffer;
    this.#data = NO_DATA;
    this.#bounds = NO_BOUNDS;
    this.#length = 0;
    const recycle = this.#recycle;
    this.#recycle = undefined;
    if (recycle !== undefined) recycle(data, bounds);
  }

  /** An empty batch starting at `firstRecord`. */
  static empty(firstRecord = 0): RecordBatch {
    return new RecordBatch(new Uint8Array(0), new Uint32Array(0), firstRecord);
  }

  /** Record `i` (0-based within the batch) as a view into {@link RecordBatch.data}. */
  get(i: number): Uint8Array {
    if (!(Number.isInteger(i) && i >= 0 && i < this.#length)) {
      throw new RangeError(expectedMessage(`an integer in [0, ${this.length - 1}]`, 'index', i));
    }
    const bounds = this.#bounds;
    const data = this.#data;
    const begin = bounds[2 * i] as number;
    return new Uint8Array(data.buffer, data.byteOffset + begin, (bounds[2 * i + 1] as number) - begin);
  }

  /** Byte length of record `i`, without creating a view. */
  byteLength(i: number): number {
    if (!(Number.isInteger(i) && i >= 0 && i < this.#length)) {
      throw new RangeError(expectedMessage(`an integer in [0, ${this.length - 1}]`, 'index', i));
    }
    return (this.#bounds[2 * i + 1] as number) - (this.#bounds[2 * i] as number);
  }

  /** Sum of the record lengths (without any framing). */
  get totalBytes(): number {
    let total = 0;
    const b = this.#bounds;
    for (let i = 0; i < b.length; i += 2) total += (b[i + 1] as number) - (b[i] as number);
    return total;
  }

  /** Yields every record, as views. */
  *[Symbol.iterator](): Iterator<Uint8Array> {
    for (let i = 0; i < this.length; i++) yield this.get(i);
  }
}

/**
 * Cuts a batch in two at record `at`: two batches over the same buffers, which go back to the
 * batch's recycler once both are released.
 */
export function splitBatch(batch: RecordBatch, at: number): [RecordBatch, RecordBatch] {
  const { data, bounds, firstRecord } = batch;
  let shares = 2;
  const done: BatchRecycler = () => {
    shares--;
    if (shares === 0) batch.release();
  };
  return [
    new RecordBatch(data, bounds.subarray(0, 2 * at), firstRecord, done),
    new RecordBatch(data, bounds.subarray(2 * at), firstRecord + at, done),
  ];
}
