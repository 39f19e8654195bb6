import type { MapNode } from '../map-node.js';
import { type MaybePromise, thenMaybe } from '../maybe-promise.js';
import { Rng } from '../rng.js';

/** A function applied to every element with a generator seeded for that element. */
export type RandomMapFn<T, U> = (value: T, rng: Rng) => MaybePromise<U>;

/**
 * `MapDataset.randomMap`: element `i` is `fn(parent[i], Rng.forIndex(seed, i))`. The generator
 * depends only on `(seed, i)`, so the result is the same whatever the order, thread or process that
 * computes it, and a later epoch (a larger `i`) draws fresh randomness.
 */
export class RandomMapNode<T, U> implements MapNode<U> {
  readonly #parent: MapNode<T>;
  readonly #fn: RandomMapFn<T, U>;
  readonly #seed: number;

  constructor(parent: MapNode<T>, fn: RandomMapFn<T, U>, seed: number) {
    this.#parent = parent;
    this.#fn = fn;
    this.#seed = seed;
  }

  get length(): number {
    return this.#parent.length;
  }

  get(index: number): MaybePromise<U | undefined> {
    return thenMaybe(this.#parent.get(index), (value) =>
      value === undefined ? undefined : this.#fn(value, Rng.forIndex(this.#seed, index)),
    );
  }

  toString(): string {
    return `${this.#parent} -> RandomMap(seed=${this.#seed})`;
  }
}
