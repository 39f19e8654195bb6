import type { RandomAccessDataSource } from '../../protocols.js';
import { describeSource, type MapNode, splitIndex } from '../map-node.js';
import { allMaybe, type MaybePromise } from '../maybe-promise.js';

/**
 * The leaf of every `MapDataset`: a user `RandomAccessDataSource`. Indices past its length wrap to
 * later epochs, so the source itself only ever sees `[0, length)`.
 */
export class SourceNode<T> implements MapNode<T> {
  readonly #source: RandomAccessDataSource<T>;

  constructor(source: RandomAccessDataSource<T>) {
    this.#source = source;
  }

  get length(): number {
    return this.#source.length;
  }

  get(index: number): MaybePromise<T> {
    return this.#source.get(splitIndex(index, this.#source.length)[1]);
  }

  getMany(indices: readonly number[]): MaybePromise<T[]> {
    const length = this.#source.length;
    const local = indices.map((index) => splitIndex(index, length)[1]);
    if (this.#source.getMany) return this.#source.getMany(local);
    return allMaybe(local.map((index) => this.#source.get(index)));
  }

  toString(): string {
    return describeSource(this.#source);
  }
}
