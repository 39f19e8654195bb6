import { checkFunction, checkInteger, checkSafeInteger, invalidArgument } from '@edl/common';
import type { RandomAccessDataSource } from '../protocols.js';
import { expectFinite } from './expect-finite.js';
import { checkMix, IterDataset } from './iter-dataset.js';
import type { MapNode } from './map-node.js';
import { MixSchedule } from './mix-schedule.js';
import { type ShardOptions, shardBounds } from './shard.js';
import { ArrayDataSource } from './sources/array-data-source.js';
import { RangeDataSource } from './sources/range-data-source.js';
import { BatchNode, type BatchOptions } from './transforms/batch.js';
import { ConcatenateNode } from './transforms/concatenate.js';
import { FilterNode, type Predicate } from './transforms/filter.js';
import { type MapFn, MapNodeMap } from './transforms/map.js';
import { MixNode } from './transforms/mix.js';
import { type RandomMapFn, RandomMapNode } from './transforms/random-map.js';
import { RepeatNode } from './transforms/repeat.js';
import { ShuffleNode } from './transforms/shuffle.js';
import { SliceNode } from './transforms/slice.js';
import { SourceNode } from './transforms/source.js';
import { type ReadOptions, ToIterDatasetIterator } from './transforms/to-iter-dataset.js';

/**
 * A lazy, immutable dataset with random access (Grain's `MapDataset`): `get(i)` computes element `i`
 * through the chain of transformations, nothing is read until then, and every operation returns a
 * new dataset.
 *
 * Indices past `length` address later epochs (`get(length + j)` is element `j` of epoch 1), which is
 * how `repeat` works and how `shuffle` draws a new order per epoch. `filter` leaves holes: `get`
 * returns `undefined` for a filtered-out element, and iteration skips them; so sources must not
 * yield `undefined` themselves (use `null`).
 *
 * @example
 * ```ts
 * const ds = MapDataset.range(10_000).shuffle(7).map((i) => i * 2).batch(32).repeat(3);
 * await ds.get(5);                              // random access, deterministic
 * for await (const batch of ds.toIterDataset({ threads: 4, prefetch: 16 })) {}
 * ```
 */
export class MapDataset<T> implements AsyncIterable<T> {
  readonly #node: MapNode<T>;

  private constructor(node: MapNode<T>) {
    this.#node = node;
  }

  /** A dataset over a random-access source, or over any array / array-like. */
  static source<T>(source: RandomAccessDataSource<T> | ArrayLike<T>): MapDataset<T> {
    if (
      typeof source === 'object' &&
      source !== null &&
      typeof (source as { get?: unknown }).get === 'function'
    ) {
      const length = (source as RandomAccessDataSource<T>).length;
      if (!(Number.isSafeInteger(length) && length >= 0) && length !== Number.POSITIVE_INFINITY) {
        invalidArgument('a source with a non-negative integer length', 'source.length', length);
      }
      return new MapDataset(new SourceNode(source as RandomAccessDataSource<T>));
    }
    return new MapDataset(new SourceNode(new ArrayDataSource(source as ArrayLike<T>)));
  }

  /** `range(stop)` or `range(start, stop, step)`: the integers of Python's `range()`. */
  static range(startOrStop: number, stop?: number, step = 1): MapDataset<number> {
    const source =
      stop === undefined
        ? new RangeDataSource(0, startOrStop, step)
        : new RangeDataSource(startOrStop, stop, step);
    return MapDataset.source(source);
  }

  /**
   * Interleaves `datasets` deterministically in proportion to `weights` (default: equal). The mixture
   * ends where its first dataset runs out (repeat the datasets to mix forever).
   */
  static mix<T>(datasets: readonly MapDataset<T>[], weights?: readonly number[]): MapDataset<T> {
    const schedule = new MixSchedule(checkMix(datasets, weights));
    return new MapDataset(new MixNode(MapDataset.#nodes(datasets, 'datasets'), schedule));
  }

  /** The datasets one after the other; only the last may be infinite. */
  static concatenate<T>(datasets: readonly MapDataset<T>[]): MapDataset<T> {
    const nodes = MapDataset.#nodes(datasets, 'datasets');
    if (nodes.length === 0) invalidArgument('a non-empty array', 'datasets', datasets);
    nodes.slice(0, -1).forEach((node, k) => {
      expectFinite(node.length, `datasets[${k}].length`);
    });
    return new MapDataset(new ConcatenateNode(nodes));
  }

  /** Number of elements per epoch, holes included (`Infinity` after `repeat()` without a count). */
  get length(): number {
    return this.#node.length;
  }

  /** Element `index` (`undefined` for a hole); indices past `length` address later epochs. */
  async get(index: number): Promise<T | undefined> {
    checkInteger(index, 'index');
    if (this.#node.length === 0) invalidArgument('an index into a non-empty dataset', 'index', index);
    return this.#node.get(index);
  }

  /** Applies `fn` to every element (it must not return `undefined`, the hole marker). */
  map<U>(fn: MapFn<T, U>): MapDataset<U> {
    return new MapDataset(new MapNodeMap(this.#node, checkFunction(fn, 'fn')));
  }

  /**
   * Applies `fn(value, rng)` with a generator seeded from `(seed, index)`: the same element always
   * gets the same randomness, in any order or process, and a new epoch gets new randomness.
   */
  randomMap<U>(fn: RandomMapFn<T, U>, seed: number): MapDataset<U> {
    return new MapDataset(
      new RandomMapNode(this.#node, checkFunction(fn, 'fn'), checkSafeInteger(seed, 'seed')),
    );
  }

  /** Turns the elements for which `predicate` is false into holes (length and indices are kept). */
  filter(predicate: Predicate<T>): MapDataset<T> {
    return new MapDataset(new FilterNode(this.#node, checkFunction(predicate, 'predicate')));
  }

  /** Groups consecutive elements of an epoch into arrays of `size`; holes are left out of a batch. */
  batch(size: number, options: BatchOptions = {}): MapDataset<T[]> {
    return new MapDataset(new BatchNode(this.#node, checkInteger(size, 'size', 1), options));
  }

  /** A global shuffle by index permutation: O(1) memory, a new order every epoch. */
  shuffle(seed: number): MapDataset<T> {
    expectFinite(this.#node.length, 'the dataset to shuffle');
    return new MapDataset(new ShuffleNode(this.#node, checkSafeInteger(seed, 'seed')));
  }

  /** Elements `start, start + step, ...` below `stop` (clamped to the length), like `array.slice`. */
  slice(start = 0, stop = this.#node.length, step = 1): MapDataset<T> {
    checkInteger(start, 'start');
    if (stop !== Number.POSITIVE_INFINITY) checkInteger(stop, 'stop');
    checkInteger(step, 'step', 1);
    const length = this.#node.length;
    return new MapDataset(new SliceNode(this.#node, Math.min(start, length), Math.min(stop, length), step));
  }

  /** `numEpochs` passes over the dataset (forever when omitted). */
  repeat(numEpochs?: number): MapDataset<T> {
    if (numEpochs !== undefined) checkInteger(numEpochs, 'numEpochs');
    return new MapDataset(new RepeatNode(this.#node, numEpochs));
  }

  /** The contiguous part of this dataset that consumer `index` of `count` reads. */
  shard(options: ShardOptions): MapDataset<T> {
    return this.slice(...shardBounds(this.#node.length, options));
  }

  /**
   * Iterates the dataset in index order, skipping holes, reading up to `prefetch` elements ahead with
   * up to `threads` concurrent `get` calls. Its iterators' state is `{ nextIndex }`.
   */
  toIterDataset(options: ReadOptions = {}): IterDataset<T> {
    const threads = checkInteger(options.threads ?? 8, 'options.threads', 1);
    const prefetch = checkInteger(options.prefetch ?? 32, 'options.prefetch');
    const node = this.#node;
    return IterDataset.fromIterator(
      () => new ToIterDatasetIterator(node, { threads, prefetch }),
      `${node} -> ToIterDataset(threads=${threads}, prefetch=${prefetch})`,
    );
  }

  /** Iterates with the default read options. */
  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.toIterDataset().iterator();
  }

  /** The chain of transformations, e.g. "RangeDataSource(0, 100, 1) -> Shuffle(seed=7) -> Batch(32)". */
  toString(): string {
    return String(this.#node);
  }

  /** Validates the datasets of a mix or concatenation and returns their nodes. */
  static #nodes<T>(datasets: readonly MapDataset<T>[], name: string): MapNode<T>[] {
    if (!Array.isArray(datasets)) invalidArgument('an array of MapDatasets', name, datasets);
    return datasets.map((dataset, k) => {
      if (!(dataset instanceof MapDataset)) invalidArgument('a MapDataset', `${name}[${k}]`, dataset);
      return dataset.#node;
    });
  }
}
