import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';

/**
 * `MapDataset.slice`: elements `start, start + step, ...` below `stop` of the parent (bounds already
 * normalized by `MapDataset.slice`). Epoch `e` of the slice reads epoch `e` of the parent.
 */
export class SliceNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #start: number;
  readonly #stop: number;
  readonly #step: number;
  readonly length: number;

  constructor(parent: MapNode<T>, start: number, stop: number, step: number) {
    this.#parent = parent;
    this.#start = start;
    this.#stop = stop;
    this.#step = step;
    this.length = Math.max(0, Math.ceil((stop - start) / step));
  }

  get(index: number): MaybePromise<T | undefined> {
    const [epoch, offset] = splitIndex(index, this.length);
    return this.#parent.get(joinIndex(epoch, this.#parent.length, this.#start + offset * this.#step));
  }

  toString(): string {
    return `${this.#parent} -> Slice(${this.#start}, ${this.#stop}, ${this.#step})`;
  }
}
