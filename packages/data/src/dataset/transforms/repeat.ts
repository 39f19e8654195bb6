import type { MapNode } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';

/**
 * `MapDataset.repeat`: `numEpochs` times the parent (forever when omitted: the length is then
 * `Infinity`). Indices pass through unchanged: the parent maps index `e * n + j` to element `j` of
 * epoch `e`, which is what gives a shuffle below a repeat a new order each epoch.
 */
export class RepeatNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #numEpochs: number | undefined;
  readonly length: number;

  constructor(parent: MapNode<T>, numEpochs?: number) {
    this.#parent = parent;
    this.#numEpochs = numEpochs;
    const n = parent.length;
    this.length = n === 0 ? 0 : numEpochs === undefined ? Number.POSITIVE_INFINITY : n * numEpochs;
  }

  get(index: number): MaybePromise<T | undefined> {
    return this.#parent.get(index);
  }

  toString(): string {
    return `${this.#parent} -> Repeat(${this.#numEpochs ?? 'forever'})`;
  }
}
