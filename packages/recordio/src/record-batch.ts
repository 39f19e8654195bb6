import { expectedMessage } from './validate.js';

/**
 * Consecutive records delivered by one read: one buffer (`data`) plus `[begin, end)` offsets
 * (`bounds`), as they came from the native decoder. `get(i)` returns a view into `data`, never a
 * copy, so a record stays valid as long as something references it (or the batch).
 *
 * Zero-copy consumers can use `data` and `bounds` directly: record `i` is
 * `data.subarray(bounds[2 * i], bounds[2 * i + 1])`.
 */
export class RecordBatch implements Iterable<Uint8Array> {
  /** The decoded bytes; records are views into it. */
  readonly data: Uint8Array;
  /** Two offsets per record into `data`: begin, end. */
  readonly bounds: Uint32Array;
  /** Index in the file of the first record (in skip mode the indices after a skipped chunk jump). */
  readonly firstRecord: number;
  /** Number of records. */
  readonly length: number;

  /**
   * @param data - the bytes the records live in.
   * @param bounds - `[begin, end)` pairs into `data`, two per record.
   * @param firstRecord - index in the file of the first record.
   */
  constructor(data: Uint8Array, bounds: Uint32Array, firstRecord: number) {
    if (bounds.length % 2 !== 0) {
      throw new RangeError(expectedMessage('an even number of offsets', 'bounds', bounds));
    }
    // A plain Uint8Array view: Buffer.prototype.subarray is slower per call than Uint8Array's.
    this.data =
      Object.getPrototypeOf(data) === Uint8Array.prototype
        ? data
        : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    this.bounds = bounds;
    this.firstRecord = firstRecord;
    this.length = bounds.length / 2;
  }

  /** An empty batch starting at `firstRecord`. */
  static empty(firstRecord = 0): RecordBatch {
    return new RecordBatch(new Uint8Array(0), new Uint32Array(0), firstRecord);
  }

  /** Record `i` (0-based within the batch) as a view into {@link RecordBatch.data}. */
  get(i: number): Uint8Array {
    if (!(Number.isInteger(i) && i >= 0 && i < this.length)) {
      throw new RangeError(expectedMessage(`an integer between 0 and ${this.length - 1}`, 'index', i));
    }
    const begin = this.bounds[2 * i] as number;
    return new Uint8Array(
      this.data.buffer,
      this.data.byteOffset + begin,
      (this.bounds[2 * i + 1] as number) - begin,
    );
  }

  /** Byte length of record `i`, without creating a view. */
  byteLength(i: number): number {
    if (!(Number.isInteger(i) && i >= 0 && i < this.length)) {
      throw new RangeError(expectedMessage(`an integer between 0 and ${this.length - 1}`, 'index', i));
    }
    return (this.bounds[2 * i + 1] as number) - (this.bounds[2 * i] as number);
  }

  /** Sum of the record lengths (without any framing). */
  get totalBytes(): number {
    let total = 0;
    const b = this.bounds;
    for (let i = 0; i < b.length; i += 2) total += (b[i + 1] as number) - (b[i] as number);
    return total;
  }

  /** Yields every record, as views. */
  *[Symbol.iterator](): Iterator<Uint8Array> {
    for (let i = 0; i < this.length; i++) yield this.get(i);
  }
}
