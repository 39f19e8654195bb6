// @edl/data/dataset: Grain's protocol for @edl/data: sources, MapDataset / IterDataset,
// checkpointable iterators, the global index shuffle and elastic sharding. It never imports the
// DataReaders of @edl/data/readers.
export type {
  DataSourceDescription,
  DatasetIterator,
  IterDatasetLike,
  JsonObject,
  JsonValue,
  RandomAccessDataSource,
} from '../protocols.js';
export {
  type Attribution,
  type AttributionEffect,
  attribute,
  attributionAfter,
  attributionOf,
  type UnitPlace,
  type UnitWindows,
  unitKeyOf,
} from './attribution.js';
export * from './autotune/index.js';
export { DatasetIteratorBase } from './dataset-iterator-base.js';
export { ElasticIterator, type ElasticIteratorOptions } from './elastic-iterator.js';
export { DatasetError, type DatasetErrorCode } from './errors.js';
export {
  epochSeed,
  type FeistelDomain,
  feistelDomain,
  IndexShuffler,
  indexShuffle,
  MAX_SHUFFLE_LENGTH,
} from './index-shuffle.js';
export { IterDataset } from './iter-dataset.js';
export { MapDataset } from './map-dataset.js';
export type { MaybePromise } from './maybe-promise.js';
export { MixSchedule } from './mix-schedule.js';
export { RingBuffer } from './ring-buffer.js';
export { Rng } from './rng.js';
export { type ShardOptions, shardBounds } from './shard.js';
export { ArrayDataSource } from './sources/array-data-source.js';
export { RangeDataSource } from './sources/range-data-source.js';
export { RecordIODataSource, type RecordIODataSourceOptions } from './sources/recordio-data-source.js';
export type { RemoteSourceOptions } from './sources/remote-source-file.js';
export { TFRecordDataSource, type TFRecordDataSourceOptions } from './sources/tfrecord-data-source.js';
export type { BatchOptions } from './transforms/batch.js';
export type { BucketOptions } from './transforms/bucket-by-sequence-length.js';
export { estimateBytes } from './transforms/cache.js';
export type { Predicate } from './transforms/filter.js';
export type { FlatMapFn } from './transforms/flat-map.js';
export type { IterableFactory } from './transforms/from-iterable.js';
export type { InterleaveFn } from './transforms/interleave.js';
export type { MapFn } from './transforms/map.js';
export type { PackableRecord, PackedRow, PackOptions } from './transforms/pack.js';
export type { NumericSequence, PaddedBatchOptions } from './transforms/padded-batch.js';
export {
  type ParallelMapFn,
  ParallelMapIterator,
  type ParallelMapOptions,
} from './transforms/parallel-map.js';
export type { RandomMapFn } from './transforms/random-map.js';
export {
  permuteUnitWindow,
  permuteWindow,
  unitWindowEnd,
  type WindowShuffleOptions,
} from './transforms/shuffle.js';
export type { ReadOptions } from './transforms/to-iter-dataset.js';
