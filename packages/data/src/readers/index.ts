export { DataReaderError, type DataReaderErrorCode } from './errors.js';
export {
  TextDataReader,
  type TextDataReaderOptions,
  type TextFormat,
  type TextRecord,
} from './text-data-reader.js';
export {
  type PgConnectionOptions,
  TableDataReader,
  type TableDataReaderOptions,
  type TableRow,
} from './table-data-reader.js';
export { RecordIODataReader, type RecordIODataReaderOptions } from './recordio-data-reader.js';
