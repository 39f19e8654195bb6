export * from './dataset/index.js';
export type {
  DataReader,
  DatasetIterator,
  JsonObject,
  JsonValue,
  RandomAccessDataSource,
  ReaderDescription,
  ReaderMetadata,
  RecordBatchLike,
  RecordRange,
  Shard,
} from './protocols.js';
export * from './readers/index.js';
export { recordsOfBatches } from './records-of-batches.js';
