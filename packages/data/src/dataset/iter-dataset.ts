import { checkFunction, checkInteger, invalidArgument } from '@edl/common';
import type { DatasetIterator, IterDatasetLike } from '../protocols.js';
import { MixSchedule } from './mix-schedule.js';
import { BatchIterator, type BatchOptions } from './transforms/batch.js';
import { FilterIterator, type Predicate } from './transforms/filter.js';
import { FromIterableIterator, type IterableFactory } from './transforms/from-iterable.js';
import { type InterleaveFn, InterleaveIterator } from './transforms/interleave.js';
import { type MapFn, MapIterator } from './transforms/map.js';
import { MixIterator } from './transforms/mix.js';
import {
  ParallelMapIterator,
  type ParallelMapOptions,
  resolveParallelMapOptions,
} from './transforms/parallel-map.js';
import { PrefetchIterator } from './transforms/prefetch.js';
import { TakeIterator } from './transforms/take.js';

/**
 * A lazy, immutable, sequential dataset (Grain's `IterDataset`). Every `iterator()` starts a fresh
 * pass; its iterators save and restore their position with `getState()` / `setState()`. Operations
 * return new datasets and run nothing until iteration.
 *
 * @example
 * ```ts
 * const batches = MapDataset.range(1000).shuffle(42).toIterDataset().map((x) => x * 2).batch(32).prefetch(4);
 * const it = batches.iterator();
 * const first = await it.next();
 * const checkpoint = it.getState(); // plain JSON
 * ```
 */
export class IterDataset<T> implements AsyncIterable<T>, IterDatasetLike<T> {
  readonly #makeIterator: () => DatasetIterator<T>;
  readonly #description: string;

  private constructor(makeIterator: () => DatasetIterator<T>, description: string) {
    this.#makeIterator = makeIterator;
    this.#description = description;
  }

  /**
   * A dataset over iterators you implement (e.g. a source that can seek): `makeIterator` must return
   * a fresh `DatasetIterator` at the start of the sequence on every call.
   */
  static fromIterator<T>(makeIterator: () => DatasetIterator<T>, name = 'IterDataset'): IterDataset<T> {
    return new IterDataset(checkFunction(makeIterator, 'makeIterator'), name);
  }

  /**
   * A dataset over any (async) iterable factory, e.g. an async generator function. The state counts
   * the elements returned; a restore replays the factory and skips them, so the factory must yield
   * the same sequence on every call.
   */
  static fromIterable<T>(factory: IterableFactory<T>, name = 'IterableDataset'): IterDataset<T> {
    checkFunction(factory, 'factory');
    return new IterDataset(() => new FromIterableIterator(factory, name), name);
  }

  /**
   * Interleaves `datasets` deterministically in proportion to `weights` (default: equal), ending when
   * the dataset whose turn it is runs out. See `MixSchedule` for the order.
   */
  static mix<T>(datasets: readonly IterDatasetLike<T>[], weights?: readonly number[]): IterDataset<T> {
    const schedule = new MixSchedule(checkMix(datasets, weights));
    return new IterDataset(
      () =>
        new MixIterator(
          datasets.map((d) => d.iterator()),
          schedule,
        ),
      `Mix([${datasets.map(String).join(', ')}], counts=[${schedule.counts.join(', ')}])`,
    );
  }

  /** A fresh iterator at the start of the dataset. */
  iterator(): DatasetIterator<T> {
    return this.#makeIterator();
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return this.iterator();
  }

  /** Applies `fn` to every element. */
  map<U>(fn: MapFn<T, U>): IterDataset<U> {
    checkFunction(fn, 'fn');
    return this.#then((parent) => new MapIterator(parent, fn), 'Map');
  }

  /** Maps elements on worker threads with an exported function, in order (see `ParallelMapOptions`). */
  mapParallel<U>(options: ParallelMapOptions): IterDataset<U> {
    const o = resolveParallelMapOptions(options);
    return this.#then(
      (parent) => new ParallelMapIterator<T, U>(parent, o),
      `ParallelMap(${o.exportName}, workers=${o.workers})`,
    );
  }

  /** Keeps the elements for which `predicate` is true. */
  filter(predicate: Predicate<T>): IterDataset<T> {
    checkFunction(predicate, 'predicate');
    return this.#then((parent) => new FilterIterator(parent, predicate), 'Filter');
  }

  /** Groups consecutive elements into arrays of `size` (the last may be shorter unless dropped). */
  batch(size: number, options: BatchOptions = {}): IterDataset<T[]> {
    checkInteger(size, 'size', 1);
    return this.#then((parent) => new BatchIterator(parent, size, options), `Batch(${size})`);
  }

  /** Reads up to `bufferSize` elements ahead in the background; the state stays exact. */
  prefetch(bufferSize: number): IterDataset<T> {
    checkInteger(bufferSize, 'bufferSize', 1);
    return this.#then((parent) => new PrefetchIterator(parent, bufferSize), `Prefetch(${bufferSize})`);
  }

  /** Replaces each element by the dataset `fn` makes of it, reading `cycleLength` of them in turn. */
  interleave<U>(fn: InterleaveFn<T, U>, cycleLength: number): IterDataset<U> {
    checkFunction(fn, 'fn');
    checkInteger(cycleLength, 'cycleLength', 1);
    return new IterDataset(
      () => new InterleaveIterator(() => this.iterator(), fn, cycleLength),
      `${this} -> Interleave(cycleLength=${cycleLength})`,
    );
  }

  /** The first `count` elements. */
  take(count: number): IterDataset<T> {
    checkInteger(count, 'count');
    return this.#then((parent) => new TakeIterator(parent, count), `Take(${count})`);
  }

  /** Reads the whole dataset into an array (tests, small datasets). */
  async toArray(): Promise<T[]> {
    const values: T[] = [];
    for await (const value of this) values.push(value);
    return values;
  }

  /** The chain of transformations, e.g. "RangeDataSource(0, 10, 1) -> Map -> Batch(32) -> Prefetch(8)". */
  toString(): string {
    return this.#description;
  }

  #then<U>(wrap: (parent: DatasetIterator<T>) => DatasetIterator<U>, step: string): IterDataset<U> {
    return new IterDataset(() => wrap(this.iterator()), `${this} -> ${step}`);
  }
}

/** Checks `mix` arguments and returns the weights to use. */
export function checkMix(datasets: readonly unknown[], weights: readonly number[] | undefined): number[] {
  if (!Array.isArray(datasets) || datasets.length === 0)
    invalidArgument('a non-empty array', 'datasets', datasets);
  if (weights === undefined) return datasets.map(() => 1);
  if (!Array.isArray(weights) || weights.length !== datasets.length) {
    invalidArgument(`an array of ${datasets.length} weights`, 'weights', weights);
  }
  weights.forEach((w, k) => {
    if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0)
      invalidArgument('a positive finite number', `weights[${k}]`, w);
  });
  return [...weights];
}
