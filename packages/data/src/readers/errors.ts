import { EdlError } from '@edl/common';

/**
 * Stable codes of {@link DataReaderError}. Programs branch on these, never on messages.
 *
 * - `IO`: a file or directory could not be read.
 * - `NO_FILES`: a RecordIO directory holds no RecordIO file.
 * - `FILE_CHANGED`: a text file changed after its index was built.
 * - `BAD_CSV`: a text file is not valid RFC 4180 CSV (the message names the record and byte offset).
 * - `UNKNOWN_SHARD`: a task names a shard this reader did not create.
 * - `OUT_OF_RANGE`: a task's range lies outside its shard.
 * - `UNKNOWN_ORIGIN`: `createDataReader` cannot tell which reader an origin needs.
 * - `TABLE_NOT_FOUND`, `COLUMN_NOT_FOUND`: the table or a column does not exist.
 * - `NO_KEY_COLUMN`: no key column was given and the table has no single-column primary key.
 * - `BAD_KEY`: the key column holds NULLs or duplicates, so keyset reading would lose rows.
 * - `QUERY_FAILED`: PostgreSQL rejected a query (the message has its SQLSTATE).
 * - `CONNECTION_LOST`: the connection dropped and every retry failed.
 * - `READER_MODULE_NOT_FOUND`, `READER_MODULE_FAILED` (it exists but failed to load),
 *   `READER_EXPORT_NOT_FOUND`, `READER_EXPORT_NOT_FUNCTION`, `NOT_A_DATA_READER`: a custom reader
 *   could not be loaded (see `loadCustomReader`).
 * - `MISSING_DEPENDENCY`: an optional package this reader needs (pg for a table) is not installed.
 * - `CLOSED`: the reader was closed.
 */
export type DataReaderErrorCode =
  | 'IO'
  | 'NO_FILES'
  | 'FILE_CHANGED'
  | 'BAD_CSV'
  | 'BAD_VALUE'
  | 'UNKNOWN_SHARD'
  | 'OUT_OF_RANGE'
  | 'UNKNOWN_ORIGIN'
  | 'TABLE_NOT_FOUND'
  | 'COLUMN_NOT_FOUND'
  | 'NO_KEY_COLUMN'
  | 'BAD_KEY'
  | 'QUERY_FAILED'
  | 'CONNECTION_LOST'
  | 'READER_MODULE_NOT_FOUND'
  | 'READER_MODULE_FAILED'
  | 'READER_EXPORT_NOT_FOUND'
  | 'READER_EXPORT_NOT_FUNCTION'
  | 'NOT_A_DATA_READER'
  | 'MISSING_DEPENDENCY'
  | 'CLOSED';

/**
 * Every failure of the data readers that is not a bad argument. The message starts with the code and
 * names the file, table, shard or module concerned, so a log line alone says where to look.
 */
export class DataReaderError extends EdlError<DataReaderErrorCode> {
  override readonly name = 'DataReaderError';

  /**
   * @param code - stable error code.
   * @param message - what went wrong and where (the code is prefixed).
   * @param cause - the underlying error, if any.
   */
  constructor(code: DataReaderErrorCode, message: string, cause?: unknown) {
    super(code, `${code}: ${message}`, { cause });
  }
}
