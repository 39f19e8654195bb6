import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import type { MapNode } from '../map-node.js';
import { type MaybePromise, thenMaybe } from '../maybe-promise.js';
import { expectStateObject, stateObject } from '../state.js';

/** A function applied to every element; it must not return `undefined` (the hole marker). */
export type MapFn<T, U> = (value: T) => MaybePromise<U>;

/** `MapDataset.map`: element `i` is `fn(parent[i])`; holes stay holes. */
export class MapNodeMap<T, U> implements MapNode<U> {
  readonly #parent: MapNode<T>;
  readonly #fn: MapFn<T, U>;

  constructor(parent: MapNode<T>, fn: MapFn<T, U>) {
    this.#parent = parent;
    this.#fn = fn;
  }

  get length(): number {
    return this.#parent.length;
  }

  get(index: number): MaybePromise<U | undefined> {
    return thenMaybe(this.#parent.get(index), (value) => (value === undefined ? undefined : this.#fn(value)));
  }

  toString(): string {
    return `${this.#parent} -> Map`;
  }
}

/** `IterDataset.map`. State: `{ parent }`. */
export class MapIterator<T, U> extends DatasetIteratorBase<U> {
  readonly #parent: DatasetIterator<T>;
  readonly #fn: MapFn<T, U>;

  constructor(parent: DatasetIterator<T>, fn: MapFn<T, U>) {
    super();
    this.#parent = parent;
    this.#fn = fn;
  }

  protected async advance(): Promise<IteratorResult<U>> {
    const result = await this.#parent.next();
    if (result.done) return DONE;
    return { done: false, value: await this.#fn(result.value) };
  }

  getState(): JsonObject {
    return { parent: this.#parent.getState() };
  }

  protected restore(state: JsonObject): void {
    this.#parent.setState(stateObject(expectStateObject(state, 'Map'), 'parent', 'Map'));
  }

  toString(): string {
    return `${this.#parent} -> Map`;
  }
}
