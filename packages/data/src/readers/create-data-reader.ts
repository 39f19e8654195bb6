import { basename, extname } from 'node:path';
import { checkObject, describeValue, expectedMessage, hasErrorCode } from '@edl/common';
import { byteSourceFor, normalizeLocation, type ObjectStat, schemeOf } from '@edl/storage';
import type { DataReader, JsonObject, ReaderDescription } from '../protocols.js';
import { type LoadCustomReaderOptions, loadCustomReader } from './custom-reader.js';
import { DataReaderError } from './errors.js';
import { listLocation, sharingListings } from './file-shards.js';
import { RecordIODataReader } from './recordio-data-reader.js';
import { TableDataReader } from './table-data-reader.js';
import { TextDataReader } from './text-data-reader.js';
import { isTFRecordPath, TFRecordDataReader } from './tfrecord-data-reader.js';

/** The built-in reader types; any other type is a custom reader spec `<module>[#export]`. */
export type BuiltInReaderType = 'recordio' | 'tfrecord' | 'text' | 'table';

const PARAM_KEYS: Record<BuiltInReaderType, readonly string[]> = {
  recordio: ['dataDir', 'files', 'maxOpenFiles', 'onCorruptChunk', 'prefetch', 'remote'],
  tfrecord: ['dataDir', 'files', 'compression', 'maxOpenFiles', 'batchBytes', 'remote'],
  text: [
    'path',
    'format',
    'header',
    'delimiter',
    'recordsPerShard',
    'indexStride',
    'columns',
    'inferTypes',
    'remote',
  ],
  table: [
    'connection',
    'table',
    'columns',
    'where',
    'unsafeWhere',
    'keyColumn',
    'recordsPerShard',
    'pageSize',
    'maxRetries',
    'retryDelayMs',
    'connectTimeoutMs',
    'applicationName',
  ],
};

const TEXT_EXTENSIONS = new Set(['.csv', '.tsv', '.txt']);
const RECORDIO_EXTENSIONS = new Set(['.rio', '.recordio']);

/**
 * Creates the reader for a data origin, or re-creates one from its `describe()` output.
 *
 * The reader is picked, in order, by:
 * 1. an explicit type: `params.type` (or the description's `type`): `recordio`, `text`, `table`, or
 *    a custom reader spec `<module>[#export]` (see `loadCustomReader`; `params` go to its factory,
 *    with `origin` added when one is given);
 * 2. the origin's URL scheme: `postgres://` or `postgresql://` is a table (`params.table` names it;
 *    the URL is the connection), `file:` is a local path;
 * 3. the path: `.csv`, `.tsv`, `.txt` is a text file; `.rio`, `.recordio` a RecordIO file;
 *    `.tfrecord`, `.tfrecords`, `.tfrec` (optionally followed by `.gz`, `.zz`, `.zlib`) a TFRecord
 *    file; a directory holds TFRecord files when every data file in it has a TFRecord extension
 *    (hidden files aside), else RecordIO files.
 *
 * The origin fills the reader's main option (`path`, `files`/`dataDir`, `connection`) unless
 * `params` already has it. Unknown params are refused, so that a typo is not silently ignored.
 *
 * @throws DataReaderError `UNKNOWN_ORIGIN` when no rule applies; whatever the reader's `open` throws.
 */
export function createDataReader(
  origin: string | ReaderDescription | undefined,
  params: JsonObject = {},
  options: LoadCustomReaderOptions = {},
): Promise<DataReader<unknown>> {
  // The listing that picks the reader is the one its open uses: one LIST per open.
  return sharingListings(() => pickAndCreate(origin, params, options));
}

async function pickAndCreate(
  origin: string | ReaderDescription | undefined,
  params: JsonObject,
  options: LoadCustomReaderOptions,
): Promise<DataReader<unknown>> {
  if (typeof origin === 'object' && origin !== null) {
    const description = checkObject(origin, 'description');
    if (typeof description.type !== 'string' || description.type === '') {
      throw new TypeError(expectedMessage('a reader description { type, params }', 'origin', origin));
    }
    const params = checkObject(description.params ?? {}, 'description.params') as JsonObject;
    return createByType(description.type, undefined, params, options);
  }
  if (origin !== undefined && (typeof origin !== 'string' || origin === '')) {
    throw new TypeError(expectedMessage('a path, URL or reader description', 'origin', origin));
  }
  const { type, ...rest } = checkObject(params, 'params');
  if (type !== undefined) {
    if (typeof type !== 'string' || type === '')
      throw new TypeError(expectedMessage('a reader type', 'params.type', type));
    return createByType(type, origin, rest as JsonObject, options);
  }
  if (origin === undefined) {
    throw new DataReaderError(
      'UNKNOWN_ORIGIN',
      'no data origin and no reader type: give a path or URL, or params.type',
    );
  }
  const scheme = schemeOf(origin);
  if (scheme === 'postgres' || scheme === 'postgresql')
    return createByType('table', origin, rest as JsonObject, options);
  // Any other origin is read through its byte source: local files, or a registered remote one.
  await byteSourceFor(origin).catch((error: unknown) => {
    if (!hasErrorCode(error, 'UNSUPPORTED_SCHEME')) throw error;
    throw unknownOrigin(origin, `the URL scheme ${scheme}: is not supported`);
  });
  const path = normalizeLocation(origin);
  const extension = extname(path).toLowerCase();
  if (TEXT_EXTENSIONS.has(extension)) return createByType('text', path, rest as JsonObject, options);
  if (RECORDIO_EXTENSIONS.has(extension)) return createByType('recordio', path, rest as JsonObject, options);
  if (isTFRecordPath(path)) return createByType('tfrecord', path, rest as JsonObject, options);
  const listing = await listingOf(path);
  if (listing !== undefined && !isFile(listing, path)) {
    const type = holdsOnlyTFRecords(listing) ? 'tfrecord' : 'recordio';
    return createByType(type, path, rest as JsonObject, options);
  }
  throw unknownOrigin(
    origin,
    listing === undefined
      ? 'no such file or directory'
      : `the extension ${JSON.stringify(extension)} is not known`,
  );
}

function unknownOrigin(origin: string, why: string): DataReaderError {
  return new DataReaderError(
    'UNKNOWN_ORIGIN',
    `cannot tell which reader reads ${describeValue(origin)}: ${why}. Known: postgres:// or postgresql:// URLs, ` +
      '.csv/.tsv/.txt text files, .rio/.recordio files, .tfrecord/.tfrecords/.tfrec files, directories of RecordIO ' +
      "or TFRecord files, or params.type ('recordio', 'tfrecord', 'text', 'table' or a custom reader '<module>[#export]')",
  );
}

async function createByType(
  type: string,
  origin: string | undefined,
  params: JsonObject,
  options: LoadCustomReaderOptions,
): Promise<DataReader<unknown>> {
  if (type !== 'recordio' && type !== 'tfrecord' && type !== 'text' && type !== 'table') {
    return loadCustomReader(type, origin === undefined ? params : { ...params, origin }, options);
  }
  const allowed = PARAM_KEYS[type];
  for (const key of Object.keys(params)) {
    if (!allowed.includes(key)) {
      throw new TypeError(
        expectedMessage(`one of ${allowed.join(', ')}`, `a param of a ${type} reader`, key),
      );
    }
  }
  const p = params as Record<string, unknown>;
  switch (type) {
    case 'text':
      return TextDataReader.open({ ...p, path: p.path ?? origin } as Parameters<
        typeof TextDataReader.open
      >[0]);
    case 'table':
      return TableDataReader.open({ ...p, connection: p.connection ?? origin } as Parameters<
        typeof TableDataReader.open
      >[0]);
    case 'tfrecord':
      return TFRecordDataReader.open(
        (await withFileOrigin(p, origin)) as Parameters<typeof TFRecordDataReader.open>[0],
      );
    case 'recordio':
      return RecordIODataReader.open(
        (await withFileOrigin(p, origin)) as Parameters<typeof RecordIODataReader.open>[0],
      );
  }
}

/** A file reader's params, with the origin as `dataDir` (a directory) or `files` unless they name files. */
async function withFileOrigin(
  params: Record<string, unknown>,
  origin: string | undefined,
): Promise<Record<string, unknown>> {
  if (params.dataDir !== undefined || params.files !== undefined || origin === undefined) return params;
  const path = normalizeLocation(origin);
  const listing = await listingOf(path);
  const isDir = listing !== undefined && !isFile(listing, path);
  return { ...params, ...(isDir ? { dataDir: path } : { files: [path] }) };
}

/** What the byte source lists at `location` (undefined when nothing is there). */
async function listingOf(location: string): Promise<ObjectStat[] | undefined> {
  return listLocation(location).catch(() => undefined);
}

/** Whether a listing is of the one file `location` names rather than of a directory. */
function isFile(listing: readonly ObjectStat[], location: string): boolean {
  return listing.length === 1 && listing[0]?.location === location;
}

/** Whether a directory's listed files are all TFRecord files (and there is at least one). */
function holdsOnlyTFRecords(listing: readonly ObjectStat[]): boolean {
  return listing.length > 0 && listing.every((object) => isTFRecordPath(basename(object.location)));
}
