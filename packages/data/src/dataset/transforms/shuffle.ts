import { epochSeed, IndexShuffler } from '../index-shuffle.js';
import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';

/**
 * `MapDataset.shuffle`: a global shuffle by index permutation, with nothing loaded in memory. Epoch
 * `e` (indices `[e * n, (e + 1) * n)`, reached through `repeat`) uses the permutation keyed by
 * `epochSeed(seed, e)`, so every epoch has its own order and no epoch of one seed repeats an epoch of
 * a neighbouring seed.
 */
export class ShuffleNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #seed: number;
  // The shuffler of the epoch read last: consecutive reads stay in one epoch.
  #shuffler: IndexShuffler | undefined;
  #epoch = -1;

  constructor(parent: MapNode<T>, seed: number) {
    this.#parent = parent;
    this.#seed = seed;
  }

  get length(): number {
    return this.#parent.length;
  }

  get(index: number): MaybePromise<T | undefined> {
    const length = this.#parent.length;
    const [epoch, offset] = splitIndex(index, length);
    if (this.#shuffler === undefined || this.#epoch !== epoch) {
      this.#shuffler = new IndexShuffler(length, epochSeed(this.#seed, epoch));
      this.#epoch = epoch;
    }
    return this.#parent.get(joinIndex(epoch, length, this.#shuffler.get(offset)));
  }

  toString(): string {
    return `${this.#parent} -> Shuffle(seed=${this.#seed})`;
  }
}
