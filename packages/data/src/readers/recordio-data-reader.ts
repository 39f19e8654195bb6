import { readdir, stat } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { RecordIOReader } from '@edl/recordio';
import type {
  DataReader,
  JsonObject,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from '../protocols.js';
import { DataReaderError } from './errors.js';
import { ReaderCache } from './reader-cache.js';
import { checkInteger, checkNonEmptyString, checkObject, checkRange, expectedMessage } from './validate.js';

/** Options of {@link RecordIODataReader.open}: exactly one of `dataDir` and `files`. */
export type RecordIODataReaderOptions = (
  | {
      /** A directory: every regular file in it whose name does not start with `.` is a RecordIO file. */
      readonly dataDir: string;
      readonly files?: undefined;
    }
  | {
      /** The RecordIO files to read. */
      readonly files: readonly string[];
      readonly dataDir?: undefined;
    }
) & {
  /** RecordIO files kept open between tasks (least recently used closed first). Default 16. */
  readonly maxOpenFiles?: number;
  /** A corrupt chunk fails the read (`error`, default) or is skipped and counted (`skip`). */
  readonly onCorruptChunk?: 'error' | 'skip';
};

/**
 * ElasticDL's default reader: one shard per RecordIO file, named by the file's absolute path, in
 * sorted (code-unit) order of paths; the record counts come from the native chunk-header index.
 * Records are `Uint8Array` views into the batch the native core decoded (no copies); keep or copy
 * them as you like, they stay valid. Files with no records give no shard.
 */
export class RecordIODataReader implements DataReader<Uint8Array> {
  readonly metadata: ReaderMetadata;
  readonly #files: readonly string[];
  readonly #dataDir: string | undefined;
  readonly #maxOpenFiles: number;
  readonly #onCorruptChunk: 'error' | 'skip';
  readonly #cache: ReaderCache<RecordIOReader>;
  #closed = false;

  private constructor(
    files: readonly string[],
    dataDir: string | undefined,
    maxOpenFiles: number,
    onCorruptChunk: 'error' | 'skip',
  ) {
    this.#files = files;
    this.#dataDir = dataDir;
    this.#maxOpenFiles = maxOpenFiles;
    this.#onCorruptChunk = onCorruptChunk;
    this.#cache = new ReaderCache(maxOpenFiles, (path) => RecordIOReader.open(path, { onCorruptChunk }));
    this.metadata = { format: 'recordio', files: files.length };
  }

  /** Checks the options and lists the files (a directory is listed now, once). */
  static async open(options: RecordIODataReaderOptions): Promise<RecordIODataReader> {
    const o = checkObject(options, 'options');
    const maxOpenFiles = checkInteger(o.maxOpenFiles, 'options.maxOpenFiles', 16, 1, 65_536);
    const onCorruptChunk = o.onCorruptChunk ?? 'error';
    if (onCorruptChunk !== 'error' && onCorruptChunk !== 'skip') {
      throw new TypeError(expectedMessage("'error' or 'skip'", 'options.onCorruptChunk', o.onCorruptChunk));
    }
    if ((o.dataDir === undefined) === (o.files === undefined)) {
      throw new TypeError(expectedMessage('exactly one of dataDir and files', 'options', o));
    }
    let files: string[];
    let dataDir: string | undefined;
    if (o.dataDir !== undefined) {
      dataDir = resolve(checkNonEmptyString(o.dataDir, 'options.dataDir'));
      files = await listRecordIOFiles(dataDir);
    } else {
      if (!Array.isArray(o.files) || o.files.length === 0) {
        throw new TypeError(expectedMessage('a non-empty array of paths', 'options.files', o.files));
      }
      files = o.files.map((f, i) => resolve(checkNonEmptyString(f, `options.files[${i}]`)));
      files = [...new Set(files)];
    }
    files.sort(compareCodeUnits);
    return new RecordIODataReader(files, dataDir, maxOpenFiles, onCorruptChunk as 'error' | 'skip');
  }

  /** The files, in shard order. */
  get files(): readonly string[] {
    return this.#files;
  }

  /** Files open now, and files opened since the reader was made (reuses of an open file not counted). */
  get openFiles(): { readonly open: number; readonly opened: number } {
    return { open: this.#cache.size, opened: this.#cache.opened };
  }

  /** One shard `{ name: path, start: 0, count: numRecords }` per file that has records. */
  async createShards(): Promise<Shard[]> {
    this.#checkOpen();
    const shards: Shard[] = [];
    for (const path of this.#files) {
      const reader = await this.#cache.acquire(path);
      try {
        if (reader.numRecords > 0) shards.push({ name: path, start: 0, count: reader.numRecords });
      } finally {
        this.#cache.release(path);
      }
    }
    return shards;
  }

  /** Yields records `[range.start, range.end)` of the file `range.shardName`. */
  async *readRecords(range: RecordRange): AsyncGenerator<Uint8Array> {
    this.#checkOpen();
    const { shardName, start, end } = checkRange(range);
    if (!this.#owns(shardName)) {
      throw new DataReaderError(
        'UNKNOWN_SHARD',
        `shard ${JSON.stringify(shardName)} is not one of the files of this reader (${this.#dataDir ?? `${this.#files.length} files`})`,
      );
    }
    const reader = await this.#cache.acquire(shardName);
    try {
      if (end > reader.numRecords) {
        throw new DataReaderError(
          'OUT_OF_RANGE',
          `records [${start}, ${end}) of ${shardName}, which has ${reader.numRecords} records`,
        );
      }
      if (end > start) yield* reader.records(start, end - start);
    } finally {
      this.#cache.release(shardName);
    }
  }

  /** `{ type: 'recordio', params }` with `dataDir` or `files`, for `createDataReader`. */
  describe(): ReaderDescription {
    const params: JsonObject =
      this.#dataDir !== undefined ? { dataDir: this.#dataDir } : { files: [...this.#files] };
    params.maxOpenFiles = this.#maxOpenFiles;
    params.onCorruptChunk = this.#onCorruptChunk;
    return { type: 'recordio', params };
  }

  /** Closes every open file. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#cache.closeAll();
  }

  /** A listed file, or (for a directory) any file directly in it: the listing may have grown. */
  #owns(path: string): boolean {
    if (this.#files.includes(path)) return true;
    return this.#dataDir !== undefined && dirname(path) === this.#dataDir && !path.endsWith('/');
  }

  #checkOpen(): void {
    if (this.#closed)
      throw new DataReaderError('CLOSED', `the RecordIO reader of ${this.#dataDir ?? 'its files'} is closed`);
  }
}

function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

async function listRecordIOFiles(dataDir: string): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dataDir);
  } catch (error) {
    throw new DataReaderError('IO', `cannot list ${dataDir}: ${(error as Error).message}`, error);
  }
  const files: string[] = [];
  for (const name of names) {
    if (name.startsWith('.')) continue;
    const path = join(dataDir, name);
    if ((await stat(path)).isFile()) files.push(path);
  }
  if (files.length === 0) throw new DataReaderError('NO_FILES', `${dataDir} holds no RecordIO file`);
  return files;
}
