import { extname } from 'node:path';
import {
  checkBoolean,
  checkNonEmptyString,
  checkObject,
  checkOptionalInteger,
  expectedMessage,
} from '@edl/common';
import { byteSourceFor, normalizeLocation } from '@edl/storage';
import type {
  DataReader,
  JsonObject,
  ReadAheadBudget,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from '../protocols.js';
import { checkRange } from './check-range.js';
import {
  type CsvColumnType,
  type CsvField,
  columnTypesOf,
  convertFields,
  inferColumnTypes,
  looksLikeHeader,
} from './csv-columns.js';
import { parseCsvRecord } from './csv-record.js';
import { DataReaderError } from './errors.js';
import { storageReason } from './file-shards.js';
import type { TextFormat } from './record-boundary-scanner.js';
import { IndexCache } from './remote/index-cache.js';
import type { RemoteFileStats } from './remote/remote-file.js';
import { checkRemoteOptions, type RemoteReadOptions } from './remote/remote-options.js';
import { RemoteTextFile } from './remote/remote-text-file.js';
import {
  buildTextIndex,
  localTextFile,
  readLeadingTexts,
  readRecordTexts,
  type TextFile,
  type TextIndex,
  type TextLayout,
} from './text-index.js';

export type { TextFormat } from './record-boundary-scanner.js';

/**
 * A record of a text file: the fields of a CSV record, or one plain line. Fields are strings,
 * except those of columns typed `float32` or `int32` (`columns`, `inferTypes`), which are numbers.
 */
export type TextRecord<F extends TextFormat = TextFormat> = F extends 'csv' ? CsvField[] : string;

/** Options of {@link TextDataReader.open}. Everything but `onIndexProgress` is kept by `describe()`. */
export interface TextDataReaderOptions<F extends TextFormat = TextFormat> {
  /**
   * The file to read: a local path (resolved against the current directory) or the URL of a remote
   * object (`s3://bucket/key`, `https://...`), whose index is built once by streaming the object
   * and cached like the other readers' (see `remote`).
   */
  readonly path: string;
  /**
   * `csv`: RFC 4180 records of fields (records are `string[]`; empty lines are skipped);
   * `lines`: one record per line (records are `string`; empty lines are records).
   * Default: `csv` for `.csv` and `.tsv` files, `lines` otherwise.
   */
  readonly format?: F;
  /** Whether the first record is a header (column names), not data. Default false. */
  readonly header?: boolean;
  /** CSV field delimiter, one ASCII character other than `"`, CR or LF. Default `,` (tab for `.tsv`). */
  readonly delimiter?: string;
  /** Records per shard. Default 10,000. */
  readonly recordsPerShard?: number;
  /** One record offset in this many is kept in the index (see TextIndex). Default 256 (64 for a remote object). */
  readonly indexStride?: number;
  /** Called while the index is built, after each MiB scanned. */
  readonly onIndexProgress?: (scannedBytes: number, totalBytes: number) => void;
  /**
   * CSV column types, by column name (header) or column number: `float32` and `int32` fields
   * become numbers (a field that is not one fails the read with `BAD_VALUE`), `string` fields stay
   * strings. Columns not named stay strings.
   */
  readonly columns?: Readonly<Record<string, CsvColumnType>>;
  /**
   * Infer CSV column types from the first 100 data records: `float32` for a column whose every
   * value there is a number, `string` otherwise. `columns` overrides single columns. Default false.
   */
  readonly inferTypes?: boolean;
  /**
   * How a remote object is read: `partBytes` (bytes per ranged GET, default 8 MiB) and
   * `indexCacheDir` (where its line index is cached); the other keys are those of the file readers.
   */
  readonly remote?: RemoteReadOptions;
}

const DEFAULT_RECORDS_PER_SHARD = 10_000;
const DEFAULT_INDEX_STRIDE = 256;
/**
 * The default stride of a remote object's index: a task fetches from the index block of its first
 * record to the block after its last, so up to 2 * (stride - 1) records more than it reads; 64
 * keeps that within 1.3% of a 10,000-record task, for 1/8 byte of index per record.
 */
const DEFAULT_REMOTE_INDEX_STRIDE = 64;
/** Records read at open to infer types and to spot a header row read as data. */
const SAMPLE_RECORDS = 101;

/**
 * ElasticDL's text reader: a CSV or plain-text file whose shards are ranges of records. A record is
 * a CSV record (which may span lines when a quoted field holds newlines) or a line. The record index
 * is built once, on the first `createShards()` or `readRecords()`, by streaming the file; the file
 * is never held in memory. Lines end with LF or CRLF; the text is UTF-8 (a BOM is skipped).
 *
 * Shard names are `<absolute path>:<start>-<end>` (records `[start, end)`, header excluded), and a
 * task's `start`/`end` are record numbers in the file.
 */
export class TextDataReader<F extends TextFormat = TextFormat> implements DataReader<TextRecord<F>> {
  readonly metadata: ReaderMetadata;
  readonly #layout: TextLayout;
  readonly #delimiter: string;
  readonly #recordsPerShard: number;
  readonly #stride: number;
  readonly #onProgress: ((scanned: number, total: number) => void) | undefined;
  /** Types of the CSV columns; undefined when every field stays a string. */
  readonly #types: readonly CsvColumnType[] | undefined;
  /** `options.remote` as given, for `describe()`. */
  readonly #remoteParam: JsonObject | undefined;
  readonly #indexCache: IndexCache;
  #index: Promise<TextIndex> | undefined;
  /**
   * Announces that `readRecords(range)` will follow: a remote object's first piece of the range is
   * fetched now, within `remote.readAheadBytes`, so that the read costs no round trip. Advisory.
   * Present only for a remote object (a local file is read when asked, and a worker holds no task
   * ahead for it).
   */
  readonly prefetch?: (range: RecordRange) => void;
  /**
   * `remote.readAheadBytes` against the first pieces fetched for announced reads and not read yet,
   * so that a worker holds as many tasks ahead as those pieces fit. Present only for a remote object.
   */
  readonly readAheadBudget?: () => ReadAheadBudget;

  private constructor(
    layout: TextLayout,
    delimiter: string,
    recordsPerShard: number,
    stride: number,
    metadata: ReaderMetadata,
    onProgress: ((scanned: number, total: number) => void) | undefined,
    types: readonly CsvColumnType[] | undefined,
    remote: ReturnType<typeof checkRemoteOptions>,
  ) {
    this.#types = types;
    this.#remoteParam = remote.given;
    this.#indexCache = new IndexCache(remote.resolved.indexCacheDir);
    const file = layout.file;
    if (file instanceof RemoteTextFile) {
      this.prefetch = (range) => this.#prefetch(file, range);
      this.readAheadBudget = () => ({ budgetBytes: file.readAheadBytes, announcedBytes: file.aheadBytes });
    }
    this.#layout = layout;
    this.#delimiter = delimiter;
    this.#recordsPerShard = recordsPerShard;
    this.#stride = stride;
    this.metadata = metadata;
    this.#onProgress = onProgress;
  }

  /** Checks the options, reads the header (if any) and returns the reader. */
  static async open<F extends TextFormat = TextFormat>(
    options: TextDataReaderOptions<F>,
  ): Promise<TextDataReader<F>> {
    checkObject(options, 'options');
    const path = normalizeLocation(checkNonEmptyString(options.path, 'options.path'));
    const extension = extname(path).toLowerCase();
    const format = options.format ?? (extension === '.csv' || extension === '.tsv' ? 'csv' : 'lines');
    if (format !== 'csv' && format !== 'lines') {
      throw new TypeError(expectedMessage("'csv' or 'lines'", 'options.format', options.format));
    }
    const delimiter = options.delimiter ?? (extension === '.tsv' ? '\t' : ',');
    if (
      typeof delimiter !== 'string' ||
      delimiter.length !== 1 ||
      delimiter.charCodeAt(0) > 0x7f ||
      delimiter === '"' ||
      delimiter === '\n' ||
      delimiter === '\r'
    ) {
      throw new TypeError(
        expectedMessage('one ASCII character other than a quote, CR or LF', 'options.delimiter', delimiter),
      );
    }
    const header = checkBoolean(options.header, 'options.header', false);
    const recordsPerShard = checkOptionalInteger(
      options.recordsPerShard,
      'options.recordsPerShard',
      DEFAULT_RECORDS_PER_SHARD,
      1,
    );
    const givenStride = checkOptionalInteger(
      options.indexStride,
      'options.indexStride',
      DEFAULT_INDEX_STRIDE,
      1,
      1 << 24,
    );
    if (options.onIndexProgress !== undefined && typeof options.onIndexProgress !== 'function') {
      throw new TypeError(expectedMessage('a function', 'options.onIndexProgress', options.onIndexProgress));
    }
    const remote = checkRemoteOptions(options.remote);
    const file = await textFileAt(path, remote.resolved);
    const stride =
      options.indexStride !== undefined
        ? givenStride
        : file.file instanceof RemoteTextFile
          ? DEFAULT_REMOTE_INDEX_STRIDE
          : DEFAULT_INDEX_STRIDE;
    const layout: TextLayout = {
      path: file.path,
      file: file.file,
      format,
      delimiter: delimiter.charCodeAt(0),
      header,
    };
    const inferTypes = checkBoolean(options.inferTypes, 'options.inferTypes', false);
    if (options.columns !== undefined) checkObject(options.columns, 'options.columns');
    if (format !== 'csv' && (inferTypes || options.columns !== undefined)) {
      throw new TypeError(expectedMessage("format 'csv'", 'options.columns / options.inferTypes', format));
    }
    const metadata: { format: TextFormat; path: string; columns?: { name: string; type: string }[] } = {
      format,
      path,
    };
    const typed = inferTypes || options.columns !== undefined;
    const sample = format === 'csv' ? await sampleRecords(layout, delimiter, typed) : [];
    if (header) {
      const text = (await readLeadingTexts(layout, 1))[0] ?? '';
      const names = format === 'csv' ? (text === '' ? [] : parseCsvRecord(text, delimiter)) : [text];
      metadata.columns = names.map((name) => ({ name, type: 'string' }));
    } else if (format === 'csv' && looksLikeHeader(sample)) {
      process.emitWarning(
        `the first row of ${path} looks like a header (${(sample[0] ?? []).join(', ')}) but the reader's ` +
          'header option is not set, so it is read as data; set {"header": true} (--data-reader-params)',
        { code: 'EDL_CSV_HEADER_ROW' },
      );
    }
    let types: CsvColumnType[] | undefined;
    if (typed) {
      const names = metadata.columns?.map((c) => c.name);
      const rows = header ? sample.slice(1) : sample;
      const width = names?.length ?? rows[0]?.length ?? 0;
      types = inferTypes ? inferColumnTypes(rows, width) : new Array<CsvColumnType>(width).fill('string');
      const overrides = columnTypesOf(options.columns ?? {}, names, width);
      for (const key of Object.keys(options.columns ?? {})) {
        const at = names?.indexOf(key) ?? -1;
        const column = at >= 0 ? at : Number(key);
        types[column] = overrides[column] as CsvColumnType;
      }
      metadata.columns = types.map((type, i) => ({ name: names?.[i] ?? String(i), type }));
    }
    return new TextDataReader<F>(
      layout,
      delimiter,
      recordsPerShard,
      stride,
      metadata,
      options.onIndexProgress,
      types,
      remote,
    );
  }

  /** Number of data records (builds the index on first use). */
  async recordCount(): Promise<number> {
    return (await this.#getIndex()).recordCount;
  }

  /** Consecutive record ranges of `recordsPerShard` records (the last one may be shorter). */
  async createShards(): Promise<Shard[]> {
    const { recordCount } = await this.#getIndex();
    const shards: Shard[] = [];
    for (let start = 0; start < recordCount; start += this.#recordsPerShard) {
      const end = Math.min(recordCount, start + this.#recordsPerShard);
      shards.push({ name: `${this.#layout.path}:${start}-${end}`, start, count: end - start });
    }
    return shards;
  }

  /** Yields records `[range.start, range.end)`, which must lie inside the shard `range.shardName`. */
  async *readRecords(range: RecordRange): AsyncGenerator<TextRecord<F>> {
    const { shardName, start, end } = checkRange(range);
    this.#checkShard(shardName, start, end);
    const index = await this.#getIndex();
    if (end > index.recordCount) {
      throw new DataReaderError(
        'OUT_OF_RANGE',
        `records [${start}, ${end}) of ${this.#layout.path}, which has ${index.recordCount} records`,
      );
    }
    if (start === end) return;
    const { from, to } = byteRangeOf(index, start, end);
    const handle = await this.#layout.file.open(from, to);
    try {
      const now = await handle.stat();
      if (now.size !== index.size || now.mtimeMs !== index.mtimeMs) {
        throw new DataReaderError(
          'FILE_CHANGED',
          `${this.#layout.path} changed after it was indexed (size ${index.size} -> ${now.size}); create a new reader`,
        );
      }
      const skip = start % index.stride;
      const texts = readRecordTexts(handle, this.#layout, from, skip, end - start, index.size);
      const csv = this.#layout.format === 'csv';
      const types = this.#types;
      const names = this.metadata.columns?.map((c) => c.name);
      let record = start;
      for await (const batch of texts) {
        for (const text of batch) {
          if (!csv) yield text as TextRecord<F>;
          else {
            const fields = parseCsvRecord(text, this.#delimiter);
            yield (
              types === undefined ? fields : convertFields(fields, types, names, this.#layout.path, record)
            ) as TextRecord<F>;
          }
          record += 1;
        }
      }
    } finally {
      await handle.close();
    }
  }

  /** `{ type: 'text', params }` from which `createDataReader` re-creates this reader. */
  describe(): ReaderDescription {
    return {
      type: 'text',
      params: {
        path: this.#layout.path,
        format: this.#layout.format,
        header: this.#layout.header,
        delimiter: this.#delimiter,
        recordsPerShard: this.#recordsPerShard,
        indexStride: this.#stride,
        // The resolved types, so that another process types the columns the same way.
        ...(this.#types === undefined
          ? {}
          : { columns: Object.fromEntries(this.#types.map((type, i) => [String(i), type])) }),
        ...(this.#remoteParam === undefined ? {} : { remote: { ...this.#remoteParam } }),
      },
    };
  }

  /**
   * Requests and bytes of a remote object (how its index was found: the cache, or one streaming
   * pass), undefined for a local file.
   */
  get remoteStats(): RemoteFileStats | undefined {
    const file = this.#layout.file;
    return file instanceof RemoteTextFile ? file.stats() : undefined;
  }

  /** Nothing to release: each read opens and closes its own file handle. */
  async close(): Promise<void> {}

  #getIndex(): Promise<TextIndex> {
    if (this.#index === undefined) {
      const build = (): Promise<TextIndex> => buildTextIndex(this.#layout, this.#stride, this.#onProgress);
      const file = this.#layout.file;
      const { format, delimiter, header } = this.#layout;
      this.#index =
        file instanceof RemoteTextFile
          ? file.index(this.#indexCache, `text\n${format}\n${delimiter}\n${header}\n${this.#stride}`, build)
          : build();
      // A failed build is not cached, so that a later call retries (e.g. after a transient I/O error).
      this.#index.catch(() => {
        this.#index = undefined;
      });
    }
    return this.#index;
  }

  #prefetch(file: RemoteTextFile, range: RecordRange): void {
    const { start, end } = checkRange(range);
    this.#getIndex().then(
      (index) => {
        if (start < end && end <= index.recordCount) {
          const { from, to } = byteRangeOf(index, start, end);
          file.prefetch(from, to);
        }
      },
      // The read that follows meets the error and reports it.
      () => {},
    );
  }

  #checkShard(shardName: string, start: number, end: number): void {
    const prefix = `${this.#layout.path}:`;
    const bounds = shardName.startsWith(prefix) ? /^(\d+)-(\d+)$/.exec(shardName.slice(prefix.length)) : null;
    if (bounds === null) {
      throw new DataReaderError(
        'UNKNOWN_SHARD',
        `shard ${JSON.stringify(shardName)} is not a shard of ${this.#layout.path}`,
      );
    }
    const shardStart = Number(bounds[1]);
    const shardEnd = Number(bounds[2]);
    if (start < shardStart || end > shardEnd) {
      throw new DataReaderError('OUT_OF_RANGE', `records [${start}, ${end}) lie outside shard ${shardName}`);
    }
  }
}

/**
 * The bytes records `[start, end)` lie in: from the index block of `start` to the block after the
 * one of `end - 1` (a remote object is fetched that far and no further).
 */
function byteRangeOf(index: TextIndex, start: number, end: number): { from: number; to: number } {
  const from = index.blockOffsets[Math.floor(start / index.stride)] ?? index.size;
  const to = index.blockOffsets[Math.ceil(end / index.stride)] ?? index.size;
  return { from, to };
}

/**
 * The text file at `location`, found and stat'ed through its byte source: a local file is streamed
 * from the local disk, a remote object by ranged GETs pinned to the version stat'ed here.
 */
async function textFileAt(
  location: string,
  remote: { readonly partBytes: number; readonly readAheadBytes: number },
): Promise<{ path: string; file: TextFile }> {
  try {
    const source = await byteSourceFor(location);
    const object = await source.stat(location);
    const path = source.localPath(object);
    if (path !== undefined) return { path, file: localTextFile(path) };
    return {
      path: object.location,
      file: new RemoteTextFile(source, object, remote.partBytes, remote.readAheadBytes),
    };
  } catch (error) {
    throw new DataReaderError('IO', `cannot read ${location}: ${storageReason(error)}`, error);
  }
}

/**
 * The first records of a CSV file as fields, header included, for type inference and the header
 * check. Only a typed reader needs them (a malformed record fails its open); the check alone
 * gives up quietly and leaves the error to the read that meets it.
 */
async function sampleRecords(layout: TextLayout, delimiter: string, required: boolean): Promise<string[][]> {
  try {
    return (await readLeadingTexts(layout, SAMPLE_RECORDS)).map((text) => parseCsvRecord(text, delimiter));
  } catch (error) {
    if (required) throw error;
    return [];
  }
}
