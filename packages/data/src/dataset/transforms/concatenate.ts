import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';

/**
 * `MapDataset.concatenate`: the parents one after the other. Only the last may be infinite. Epoch `e`
 * of the concatenation reads epoch `e` of each parent.
 */
export class ConcatenateNode<T> implements MapNode<T> {
  readonly #parents: readonly MapNode<T>[];
  /** `#offsets[k]` is the index of the first element of parent `k`; the last entry is the length. */
  readonly #offsets: number[];
  readonly length: number;

  constructor(parents: readonly MapNode<T>[]) {
    this.#parents = parents;
    this.#offsets = [0];
    let total = 0;
    for (const parent of parents) {
      total += parent.length;
      this.#offsets.push(total);
    }
    this.length = total;
  }

  get(index: number): MaybePromise<T | undefined> {
    const [epoch, offset] = splitIndex(index, this.length);
    // Binary search for the last parent whose first index is <= offset (empty parents are skipped).
    let lo = 0;
    let hi = this.#parents.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.#offsets[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    const parent = this.#parents[lo]!;
    return parent.get(joinIndex(epoch, parent.length, offset - this.#offsets[lo]!));
  }

  toString(): string {
    return `Concatenate(${this.#parents.map(String).join(', ')})`;
  }
}
