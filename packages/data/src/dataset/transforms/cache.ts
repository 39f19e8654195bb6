import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { copyState, expectStateObject, stateCount } from '../state.js';

/**
 * The elements one `cache()` dataset has read, shared by all its iterators: filled in order by the
 * iterator that reads the first pass, complete once that pass ended.
 */
export class CacheStore<T> {
  readonly values: T[] = [];
  bytes = 0;
  complete = false;

  /** `maxBytes` caps `bytes`, the estimated size of `values` (see `estimateBytes`). */
  constructor(readonly maxBytes: number) {}
}

/**
 * A rough size of a value in memory: 8 bytes per number, 2 per string character, the byte length of
 * binary data, plus 8 per array slot or object key. Shared structure is counted once per reference.
 */
export function estimateBytes(value: unknown): number {
  switch (typeof value) {
    case 'number':
    case 'bigint':
      return 8;
    case 'boolean':
      return 4;
    case 'string':
      return 2 * value.length;
    case 'object': {
      if (value === null) return 0;
      if (ArrayBuffer.isView(value)) return value.byteLength;
      if (value instanceof ArrayBuffer) return value.byteLength;
      let total = 0;
      if (Array.isArray(value)) {
        for (const item of value) total += 8 + estimateBytes(item);
        return total;
      }
      for (const [key, item] of Object.entries(value)) total += 8 + 2 * key.length + estimateBytes(item);
      return total;
    }
    default:
      return 0;
  }
}

/**
 * `IterDataset.cache`: the first pass reads the parent and keeps every element in memory (tf.data's
 * `cache()` without a file); later passes, and any iterator made after the first pass ended, read the
 * kept elements. Past `maxBytes` the pass fails with `DatasetError` `ERR_CACHE_FULL`.
 *
 * State: `{ parent, position }`. While reading the parent, `parent` is its state; from the cache it is
 * `null` and the state is the position only. Restoring a position-only state into a process whose cache
 * is empty first re-reads the whole pass to fill it.
 */
export class CacheIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  readonly #store: CacheStore<T>;
  /** The parent's state at the start of the pass: where a refill starts. */
  readonly #startState: JsonObject;
  #position = 0;
  /** True while elements come from the parent, false while they come from the store. */
  #fromParent: boolean;
  /** A position-only state was restored before the store was complete: fill it first. */
  #refill = false;

  constructor(parent: DatasetIterator<T>, store: CacheStore<T>) {
    super();
    this.#parent = parent;
    this.#store = store;
    this.#startState = parent.getState();
    this.#fromParent = !store.complete;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.#refill) await this.#fill();
    if (!this.#fromParent) {
      if (this.#position >= this.#store.values.length) return DONE;
      return { done: false, value: this.#store.values[this.#position++]! };
    }
    const result = await this.#parent.next();
    if (result.done) {
      if (this.#position === this.#store.values.length) this.#store.complete = true;
      if (this.#store.complete) this.#fromParent = false;
      return DONE;
    }
    this.#keep(result.value);
    this.#position++;
    return result;
  }

  /** Appends the element at `#position` when this iterator is the one filling the store. */
  #keep(value: T): void {
    const store = this.#store;
    if (store.complete || this.#position !== store.values.length) return;
    const bytes = store.bytes + estimateBytes(value);
    if (bytes > store.maxBytes) {
      throw new DatasetError(
        'ERR_CACHE_FULL',
        `${this}: element ${this.#position} brings the cache to about ${bytes} bytes, over maxBytes=${store.maxBytes}; raise maxBytes or cache a smaller dataset`,
      );
    }
    store.values.push(value);
    store.bytes = bytes;
  }

  /** Reads the whole pass from the parent's start into the store. */
  async #fill(): Promise<void> {
    this.#parent.setState(copyState(this.#startState));
    const position = this.#position;
    this.#position = 0;
    for (;;) {
      const result = await this.#parent.next();
      if (result.done) break;
      this.#keep(result.value);
      this.#position++;
    }
    if (this.#position === this.#store.values.length) this.#store.complete = true;
    this.#position = position;
    this.#refill = false;
  }

  getState(): JsonObject {
    return { parent: this.#fromParent ? this.#parent.getState() : null, position: this.#position };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'Cache');
    const position = stateCount(checked, 'position', 'Cache');
    const parent = checked.parent;
    if (parent === null || this.#store.complete) {
      // The cache serves the rest; an incomplete one is filled by the next read.
      this.#fromParent = false;
      this.#refill = !this.#store.complete;
    } else {
      this.#parent.setState(expectStateObject(parent, 'Cache parent'));
      this.#fromParent = true;
      this.#refill = false;
    }
    this.#position = position;
  }

  toString(): string {
    return `${this.#parent} -> Cache(maxBytes=${this.#store.maxBytes})`;
  }
}
