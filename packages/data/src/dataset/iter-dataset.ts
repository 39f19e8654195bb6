import { checkFunction, checkInteger, checkOptions, checkSafeInteger, invalidArgument } from '@edl/common';
import type { DatasetIterator, IterDatasetLike } from '../protocols.js';
import {
  type AttributionEffect,
  attribute,
  attributionAfter,
  attributionOf,
  refuseAttributed,
} from './attribution.js';
import { MixSchedule } from './mix-schedule.js';
import { BatchIterator, type BatchOptions } from './transforms/batch.js';
import {
  BucketBySequenceLengthIterator,
  type BucketOptions,
  resolveBucketSpec,
} from './transforms/bucket-by-sequence-length.js';
import { CacheIterator, CacheStore } from './transforms/cache.js';
import { FilterIterator, type Predicate } from './transforms/filter.js';
import { type FlatMapFn, FlatMapIterator } from './transforms/flat-map.js';
import { FromIterableIterator, type IterableFactory } from './transforms/from-iterable.js';
import { type InterleaveFn, InterleaveIterator } from './transforms/interleave.js';
import { type MapFn, MapIterator } from './transforms/map.js';
import { MixIterator } from './transforms/mix.js';
import {
  type PackableRecord,
  type PackedRow,
  PackIterator,
  type PackOptions,
  resolvePackOptions,
} from './transforms/pack.js';
import {
  type NumericSequence,
  PaddedBatchIterator,
  type PaddedBatchOptions,
  resolvePaddedBatchOptions,
} from './transforms/padded-batch.js';
import {
  ParallelMapIterator,
  type ParallelMapOptions,
  resolveParallelMapOptions,
} from './transforms/parallel-map.js';
import { PrefetchIterator } from './transforms/prefetch.js';
import { RebatchIterator } from './transforms/rebatch.js';
import { RepeatIterator } from './transforms/repeat.js';
import { WindowShuffleIterator, type WindowShuffleOptions } from './transforms/shuffle.js';
import { SkipIterator } from './transforms/skip.js';
import { TakeIterator } from './transforms/take.js';
import { unbatchIterator } from './transforms/unbatch.js';
import { ZipIterator } from './transforms/zip.js';

/** Default `cache()` cap: 1 GiB. */
const DEFAULT_CACHE_BYTES = 2 ** 30;

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
      () => {
        const parents = datasets.map((d) => d.iterator());
        refuseAttributed(parents, 'Mix', 'would interleave records out of order');
        return new MixIterator(parents, schedule);
      },
      `Mix([${datasets.map(String).join(', ')}], counts=[${schedule.counts.join(', ')}])`,
    );
  }

  /**
   * Tuples of the datasets' elements taken in step (Grain's and tf.data's `zip`), ending with the
   * shortest. State: `{ parents }`.
   */
  static zip<T extends unknown[]>(
    datasets: { readonly [K in keyof T]: IterDatasetLike<T[K]> },
  ): IterDataset<T> {
    const parents: readonly IterDatasetLike<unknown>[] = datasets;
    if (!Array.isArray(parents) || parents.length === 0)
      invalidArgument('a non-empty array', 'datasets', datasets);
    return new IterDataset(
      () => {
        const iterators = parents.map((d) => d.iterator());
        refuseAttributed(iterators, 'Zip', 'would merge records out of order');
        return new ZipIterator<T>(iterators);
      },
      `Zip(${parents.map(String).join(', ')})`,
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
    return this.#then((parent) => new MapIterator(parent, fn), 'Map', 'keeps');
  }

  /** Maps elements on worker threads with an exported function, in order (see `ParallelMapOptions`). */
  mapParallel<U>(options: ParallelMapOptions): IterDataset<U> {
    const o = resolveParallelMapOptions(options);
    return this.#then(
      (parent) => new ParallelMapIterator<T, U>(parent, o),
      `ParallelMap(${o.exportName}, workers=${o.autoWorkers ? 'auto' : o.workers})`,
      'reads-ahead',
    );
  }

  /** Keeps the elements for which `predicate` is true. */
  filter(predicate: Predicate<T>): IterDataset<T> {
    checkFunction(predicate, 'predicate');
    return this.#then((parent) => new FilterIterator(parent, predicate), 'Filter', {
      refused: 'would drop records',
    });
  }

  /** Groups consecutive elements into arrays of `size` (the last may be shorter unless dropped). */
  batch(size: number, options: BatchOptions = {}): IterDataset<T[]> {
    checkInteger(size, 'size', 1);
    return this.#then((parent) => new BatchIterator(parent, size, options), `Batch(${size})`, 'groups');
  }

  /**
   * Reads up to `bufferSize` elements ahead in the background; the state stays exact. `'auto'`:
   * the process's tuner sizes the buffer from measured rates within the RAM budget (see
   * `configureAutotune`).
   */
  prefetch(bufferSize: number | 'auto'): IterDataset<T> {
    if (bufferSize !== 'auto') checkInteger(bufferSize, 'bufferSize', 1);
    return this.#then(
      (parent) => new PrefetchIterator(parent, bufferSize),
      `Prefetch(${bufferSize})`,
      'reads-ahead',
    );
  }

  /** Replaces each element by the dataset `fn` makes of it, reading `cycleLength` of them in turn. */
  interleave<U>(fn: InterleaveFn<T, U>, cycleLength: number): IterDataset<U> {
    checkFunction(fn, 'fn');
    checkInteger(cycleLength, 'cycleLength', 1);
    return new IterDataset(
      () =>
        new InterleaveIterator(
          () => {
            const parent = this.iterator();
            refuseAttributed([parent], 'Interleave', 'would replace records by datasets');
            return parent;
          },
          fn,
          cycleLength,
        ),
      `${this} -> Interleave(cycleLength=${cycleLength})`,
    );
  }

  /** The first `count` elements. */
  take(count: number): IterDataset<T> {
    checkInteger(count, 'count');
    return this.#then((parent) => new TakeIterator(parent, count), `Take(${count})`, {
      refused: 'would leave records unconsumed',
    });
  }

  /** Drops the first `count` elements. */
  skip(count: number): IterDataset<T> {
    checkInteger(count, 'count');
    return this.#then((parent) => new SkipIterator(parent, count), `Skip(${count})`, {
      refused: 'would drop records',
    });
  }

  /**
   * Grain's window shuffle: shuffles each window of `bufferSize` consecutive elements with a
   * generator keyed by `(seed, window)`. The state holds no element; a restore re-reads at most one
   * window. For random-access data, `MapDataset.shuffle` (a global shuffle) stays the better choice.
   */
  shuffle(options: WindowShuffleOptions): IterDataset<T> {
    const o = checkOptions(options, 'options', ['bufferSize', 'seed']);
    const resolved = {
      bufferSize: checkInteger(o.bufferSize, 'options.bufferSize', 1),
      seed: checkSafeInteger(o.seed, 'options.seed'),
    };
    return this.#then(
      (parent) => new WindowShuffleIterator(parent, resolved),
      `WindowShuffle(bufferSize=${resolved.bufferSize}, seed=${resolved.seed})`,
      'reorders-in-unit',
    );
  }

  /** Replaces each element by the elements `fn` returns for it (`fn` must be deterministic). */
  flatMap<U>(fn: FlatMapFn<T, U>): IterDataset<U> {
    checkFunction(fn, 'fn');
    return this.#then((parent) => new FlatMapIterator(parent, fn), 'FlatMap', {
      refused: 'may drop, add or split records',
    });
  }

  /** The items of each iterable element (e.g. a batch), one by one. */
  unbatch<U>(this: IterDataset<Iterable<U>>): IterDataset<U> {
    return this.#then((parent) => unbatchIterator(parent), 'Unbatch', 'regroups');
  }

  /** Regroups the items of iterable elements into arrays of `size`, across element boundaries. */
  rebatch<U>(this: IterDataset<Iterable<U>>, size: number, options: BatchOptions = {}): IterDataset<U[]> {
    checkInteger(size, 'size', 1);
    return this.#then((parent) => new RebatchIterator(parent, size, options), `Rebatch(${size})`, 'regroups');
  }

  /** `numEpochs` passes over the dataset (forever when omitted); the dataset must replay the same elements. */
  repeat(numEpochs?: number): IterDataset<T> {
    if (numEpochs !== undefined) checkInteger(numEpochs, 'numEpochs');
    return this.#then(
      (parent) => new RepeatIterator(parent, numEpochs),
      `Repeat(${numEpochs ?? 'forever'})`,
      {
        refused: 'would read the records again',
      },
    );
  }

  /** Batches numeric sequences padded to the longest of the batch or to `options.paddedLength`. */
  paddedBatch(
    this: IterDataset<NumericSequence>,
    size: number,
    options?: PaddedBatchOptions,
  ): IterDataset<number[][]> {
    checkInteger(size, 'size', 1);
    const o = resolvePaddedBatchOptions(options);
    return this.#then((parent) => new PaddedBatchIterator(parent, size, o), `PaddedBatch(${size})`, 'groups');
  }

  /**
   * Buckets numeric sequences by length (bucket `b` holds lengths below `boundaries[b]`) and returns a
   * padded batch when bucket `b` holds `batchSizes[b]` of them (tf.data's `bucket_by_sequence_length`).
   */
  bucketBySequenceLength(
    this: IterDataset<NumericSequence>,
    boundaries: readonly number[],
    batchSizes: readonly number[],
    options?: BucketOptions,
  ): IterDataset<number[][]> {
    const spec = resolveBucketSpec(boundaries, batchSizes, options);
    return this.#then(
      (parent) => new BucketBySequenceLengthIterator(parent, spec),
      `BucketBySequenceLength([${spec.boundaries.join(', ')}], [${spec.batchSizes.join(', ')}])`,
      { refused: 'would reorder records across tasks' },
    );
  }

  /** First-fit packs records of equal-length features into rows of `options.rowLength` (Grain's packing). */
  pack<K extends string>(
    this: IterDataset<PackableRecord<K>>,
    options: PackOptions,
  ): IterDataset<PackedRow<K>> {
    const o = resolvePackOptions(options);
    return this.#then(
      (parent) => new PackIterator<K>(parent, o),
      `Pack(rowLength=${o.rowLength}, numBins=${o.numBins})`,
      { refused: 'would merge records out of order' },
    );
  }

  /**
   * Keeps the elements of the first pass in memory, up to `maxBytes` (default 1 GiB, estimated), and
   * serves later passes from there; past the cap the pass fails with `ERR_CACHE_FULL`.
   */
  cache(options: { readonly maxBytes?: number } = {}): IterDataset<T> {
    const o = checkOptions(options, 'options', ['maxBytes']);
    const maxBytes =
      o.maxBytes === undefined ? DEFAULT_CACHE_BYTES : checkInteger(o.maxBytes, 'options.maxBytes', 1);
    const store = new CacheStore<T>(maxBytes);
    return this.#then((parent) => new CacheIterator(parent, store), `Cache(maxBytes=${maxBytes})`, 'keeps');
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

  /**
   * The dataset of `step` over this one. Over an attributed source (the records a worker counts to
   * its tasks), `effect` says what the step does to that counting: a step that would break it
   * throws when its iterator is made (see attribution.ts).
   */
  #then<U>(
    wrap: (parent: DatasetIterator<T>) => DatasetIterator<U>,
    step: string,
    effect: AttributionEffect,
  ): IterDataset<U> {
    return new IterDataset(() => {
      const parent = this.iterator();
      const attribution = attributionAfter(attributionOf(parent), step, effect);
      const iterator = wrap(parent);
      return attribution === undefined ? iterator : attribute(iterator, attribution);
    }, `${this} -> ${step}`);
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
