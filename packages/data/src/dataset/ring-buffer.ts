/**
 * A bounded FIFO over a fixed array: O(1) push and shift, no reallocation, as tfjs-data's prefetch
 * buffer. Pushing into a full buffer is a bug of the caller and throws.
 */
export class RingBuffer<T> {
  readonly capacity: number;
  readonly #items: Array<T | undefined>;
  #start = 0;
  #length = 0;

  constructor(capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) {
      throw new RangeError(`Expected a positive integer for capacity but received ${String(capacity)}`);
    }
    this.capacity = capacity;
    this.#items = new Array<T | undefined>(capacity).fill(undefined);
  }

  get length(): number {
    return this.#length;
  }

  /** Appends an item; throws a RangeError when the buffer is full. */
  push(item: T): void {
    if (this.#length === this.capacity) {
      throw new RangeError(
        `Expected a ring buffer with free space for push but received a full buffer of ${this.capacity}`,
      );
    }
    this.#items[(this.#start + this.#length) % this.capacity] = item;
    this.#length++;
  }

  /** Removes and returns the oldest item, or undefined when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#start];
    this.#items[this.#start] = undefined;
    this.#start = (this.#start + 1) % this.capacity;
    this.#length--;
    return item;
  }

  /** A buffer of `capacity` (at least the items held) with the same items in the same order. */
  resized(capacity: number): RingBuffer<T> {
    if (capacity < this.#length) {
      throw new RangeError(
        `Expected a capacity of at least ${this.#length} (the items held) but received ${capacity}`,
      );
    }
    const next = new RingBuffer<T>(capacity);
    for (let i = 0; i < this.#length; i++) next.push(this.#items[(this.#start + i) % this.capacity] as T);
    return next;
  }

  /** Removes every item. */
  clear(): void {
    this.#items.fill(undefined);
    this.#start = 0;
    this.#length = 0;
  }
}
