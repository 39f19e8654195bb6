import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import { allMaybe, type MaybePromise, thenMaybe } from '../maybe-promise.js';
import { expectStateObject, stateObject } from '../state.js';

/** Options of `batch`. */
export interface BatchOptions {
  /** Drop a last batch smaller than `size` (default false). */
  readonly dropRemainder?: boolean;
}

/**
 * `MapDataset.batch`: element `i` is the array of parent elements `[i * size, (i + 1) * size)` of the
 * same epoch, read with the parent's `getMany` when it has one. Holes are left out of a batch (so a
 * batch after a `filter` may be short) and a batch of holes only is a hole; use
 * `toIterDataset().batch()` for full batches after a filter.
 */
export class BatchNode<T> implements MapNode<T[]> {
  readonly #parent: MapNode<T>;
  readonly #size: number;
  readonly #dropRemainder: boolean;
  readonly length: number;

  constructor(parent: MapNode<T>, size: number, options: BatchOptions = {}) {
    this.#parent = parent;
    this.#size = size;
    this.#dropRemainder = options.dropRemainder ?? false;
    const n = parent.length;
    this.length = this.#dropRemainder ? Math.floor(n / size) : Math.ceil(n / size);
  }

  get(index: number): MaybePromise<T[] | undefined> {
    const parentLength = this.#parent.length;
    const [epoch, offset] = splitIndex(index, this.length);
    const start = offset * this.#size;
    const end = Math.min(start + this.#size, parentLength);
    const indices: number[] = [];
    for (let i = start; i < end; i++) indices.push(joinIndex(epoch, parentLength, i));
    const values = this.#parent.getMany
      ? this.#parent.getMany(indices)
      : allMaybe(indices.map((i) => this.#parent.get(i)));
    return thenMaybe(values, (batch) => {
      const kept = batch.filter((value): value is T => value !== undefined);
      return kept.length === 0 ? undefined : kept;
    });
  }

  toString(): string {
    return `${this.#parent} -> Batch(${this.#size}${this.#dropRemainder ? ', dropRemainder' : ''})`;
  }
}

/**
 * `IterDataset.batch`: collects `size` consecutive elements in one `next()`, so between two calls the
 * position is entirely the parent's. State: `{ parent }`.
 */
export class BatchIterator<T> extends DatasetIteratorBase<T[]> {
  readonly #parent: DatasetIterator<T>;
  readonly #size: number;
  readonly #dropRemainder: boolean;

  constructor(parent: DatasetIterator<T>, size: number, options: BatchOptions = {}) {
    super();
    this.#parent = parent;
    this.#size = size;
    this.#dropRemainder = options.dropRemainder ?? false;
  }

  protected async advance(): Promise<IteratorResult<T[]>> {
    const batch: T[] = [];
    while (batch.length < this.#size) {
      const result = await this.#parent.next();
      if (result.done) break;
      batch.push(result.value);
    }
    if (batch.length === 0 || (batch.length < this.#size && this.#dropRemainder)) return DONE;
    return { done: false, value: batch };
  }

  getState(): JsonObject {
    return { parent: this.#parent.getState() };
  }

  protected restore(state: JsonObject): void {
    this.#parent.setState(stateObject(expectStateObject(state, 'Batch'), 'parent', 'Batch'));
  }

  toString(): string {
    return `${this.#parent} -> Batch(${this.#size}${this.#dropRemainder ? ', dropRemainder' : ''})`;
  }
}
