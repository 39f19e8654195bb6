export type {
  DataReader,
  DatasetIterator,
  JsonObject,
  JsonValue,
  RandomAccessDataSource,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from './protocols.js';
