import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import type { MapNode } from '../map-node.js';
import { type MaybePromise, thenMaybe } from '../maybe-promise.js';
import { expectStateObject, stateObject } from '../state.js';

/** A predicate deciding which elements are kept. */
export type Predicate<T> = (value: T) => MaybePromise<boolean>;

/**
 * `MapDataset.filter`: keeps the length and indices of its parent and turns rejected elements into
 * holes (`undefined`), as Grain does with `None`. Random access stays O(1); iteration skips holes.
 */
export class FilterNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #predicate: Predicate<T>;

  constructor(parent: MapNode<T>, predicate: Predicate<T>) {
    this.#parent = parent;
    this.#predicate = predicate;
  }

  get length(): number {
    return this.#parent.length;
  }

  get(index: number): MaybePromise<T | undefined> {
    return thenMaybe(this.#parent.get(index), (value) =>
      value === undefined
        ? undefined
        : thenMaybe(this.#predicate(value), (keep) => (keep ? value : undefined)),
    );
  }

  toString(): string {
    return `${this.#parent} -> Filter`;
  }
}

/** `IterDataset.filter`: pulls from its parent until an element passes. State: `{ parent }`. */
export class FilterIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  readonly #predicate: Predicate<T>;

  constructor(parent: DatasetIterator<T>, predicate: Predicate<T>) {
    super();
    this.#parent = parent;
    this.#predicate = predicate;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    for (;;) {
      const result = await this.#parent.next();
      if (result.done) return DONE;
      if (await this.#predicate(result.value)) return result;
    }
  }

  getState(): JsonObject {
    return { parent: this.#parent.getState() };
  }

  protected restore(state: JsonObject): void {
    this.#parent.setState(stateObject(expectStateObject(state, 'Filter'), 'parent', 'Filter'));
  }

  toString(): string {
    return `${this.#parent} -> Filter`;
  }
}
