// @edl/data: the datasets (@edl/data/dataset) and the DataReaders (@edl/data/readers) in one
// import. The two libraries never import each other; import a subpath to load only one.
export * from './dataset/index.js';
export type {
  DataReader,
  DatasetIterator,
  JsonObject,
  JsonValue,
  RandomAccessDataSource,
  ReadAheadBudget,
  ReaderDescription,
  ReaderMetadata,
  RecordBatchLike,
  RecordRange,
  Shard,
} from './protocols.js';
export { DEFAULT_MAX_RANGES_AHEAD, RANGES_AHEAD_UNMEASURED, wantsAnotherRangeAhead } from './read-ahead.js';
export * from './readers/index.js';
export { recordsOfBatches } from './records-of-batches.js';
