// @edl/data/readers: DataReaders, which split data into shards of records and read them in
// batches (RecordIO, TFRecord, text/CSV, PostgreSQL tables, custom readers). They never import the
// datasets of @edl/data/dataset.
export type {
  DataReader,
  JsonObject,
  JsonValue,
  ReaderDescription,
  ReaderMetadata,
  RecordBatchLike,
  RecordRange,
  Shard,
} from '../protocols.js';
export { recordsOfBatches } from '../records-of-batches.js';
export { type BuiltInReaderType, createDataReader } from './create-data-reader.js';
export {
  type CsvColumnType,
  type CsvField,
  inferColumnTypes,
  isNumericField,
  looksLikeHeader,
} from './csv-columns.js';
export {
  type CustomReaderSpec,
  type DataReaderFactory,
  isDataReader,
  type LoadCustomReaderOptions,
  loadCustomReader,
  loadReaderFactory,
  parseReaderParams,
  parseReaderSpec,
} from './custom-reader.js';
export { DataReaderError, type DataReaderErrorCode } from './errors.js';
export { loadPg, PG_VERSION_RANGE } from './pg-module.js';
export {
  RecordIODataReader,
  type RecordIODataReaderOptions,
  type RecordIOPrefetchOptions,
} from './recordio-data-reader.js';
export { type BuiltSidecarIndex, buildSidecarIndex } from './remote/build-sidecar.js';
export {
  defaultIndexCacheDir,
  INDEX_CACHE_ENV,
  IndexCache,
  type RemoteIndexAnswer,
  type RemoteIndexProvider,
  setRemoteIndexProvider,
} from './remote/index-cache.js';
export type { RemoteFileStats } from './remote/remote-file.js';
export type { IndexOrigin, RemoteIndexReport } from './remote/remote-index.js';
export type { RemoteReadOptions } from './remote/remote-options.js';
export type { RemoteReadStats } from './remote/remote-reads.js';
export {
  type PgConnectionOptions,
  TableDataReader,
  type TableDataReaderOptions,
  type TableRow,
} from './table-data-reader.js';
export {
  TextDataReader,
  type TextDataReaderOptions,
  type TextFormat,
  type TextRecord,
} from './text-data-reader.js';
export {
  isTFRecordPath,
  listTFRecordFiles,
  TFRECORD_EXTENSIONS,
  TFRecordDataReader,
  type TFRecordDataReaderOptions,
} from './tfrecord-data-reader.js';
