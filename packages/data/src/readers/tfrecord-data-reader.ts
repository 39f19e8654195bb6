import { dirname, extname, resolve } from 'node:path';
import { checkNonEmptyString, checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import {
  type RecordBatch,
  TFRECORD_COMPRESSIONS,
  type TFRecordCompressionOption,
  TFRecordReader,
} from '@edl/recordio';
import type {
  DataReader,
  JsonObject,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from '../protocols.js';
import { recordsOfBatches } from '../records-of-batches.js';
import { DataReaderError } from './errors.js';
import { checkFileRange, checkWithinFile, compareCodeUnits, listDataFiles } from './file-shards.js';
import { ReaderCache } from './reader-cache.js';

/** File name extensions of TFRecord files (a trailing `.gz`/`.zz`/`.zlib` is allowed after them). */
export const TFRECORD_EXTENSIONS: readonly string[] = ['.tfrecord', '.tfrecords', '.tfrec'];

/** Options of {@link TFRecordDataReader.open}: exactly one of `dataDir` and `files`. */
export type TFRecordDataReaderOptions = (
  | {
      /** A directory: its TFRecord files (by extension, see {@link isTFRecordPath}) are read. */
      readonly dataDir: string;
      readonly files?: undefined;
    }
  | {
      readonly files: readonly string[];
      readonly dataDir?: undefined;
    }
) & {
  /** How the files are stored; `auto` (default) tells each file from its first bytes. */
  readonly compression?: TFRecordCompressionOption;
  /** Files kept open between tasks (default 16). */
  readonly maxOpenFiles?: number;
  /** Bytes per batch read (default 1 MiB). */
  readonly batchBytes?: number;
};

const MIB = 1024 * 1024;

/** Whether `path` names a TFRecord file: `.tfrecord`, `.tfrecords`, `.tfrec`, optionally + `.gz`/`.zz`/`.zlib`. */
export function isTFRecordPath(path: string): boolean {
  let lower = path.toLowerCase();
  const ext = extname(lower);
  if (ext === '.gz' || ext === '.zz' || ext === '.zlib') lower = lower.slice(0, -ext.length);
  return TFRECORD_EXTENSIONS.includes(extname(lower));
}

/**
 * ElasticDL's reader for TensorFlow's TFRecord files: one shard per file (named by its absolute
 * path, sorted), of as many records as the file holds. Uncompressed files are indexed by a native
 * header scan, so a task's range is read directly; GZIP/ZLIB files are counted once by
 * decompressing them, and read in order: a task that starts where the previous task of the file
 * ended continues the same decompressing stream, any other task decompresses from the file's start.
 *
 * Records are `Uint8Array` views into the batch they were read in. `readBatches` yields the batches
 * themselves (the worker's batch path). A damaged file fails `createShards` with the
 * `TFRecordError` that names its first bad frame, so no record is silently left out of a job.
 */
export class TFRecordDataReader implements DataReader<Uint8Array> {
  readonly metadata: ReaderMetadata;
  readonly #files: readonly string[];
  readonly #dataDir: string | undefined;
  readonly #compression: TFRecordCompressionOption;
  readonly #maxOpenFiles: number;
  readonly #batchBytes: number;
  readonly #cache: ReaderCache<TFRecordReader>;
  #closed = false;

  private constructor(
    files: readonly string[],
    dataDir: string | undefined,
    compression: TFRecordCompressionOption,
    maxOpenFiles: number,
    batchBytes: number,
  ) {
    this.#files = files;
    this.#dataDir = dataDir;
    this.#compression = compression;
    this.#maxOpenFiles = maxOpenFiles;
    this.#batchBytes = batchBytes;
    this.#cache = new ReaderCache(maxOpenFiles, (path) =>
      TFRecordReader.open(path, { compression, batchBytes }),
    );
    this.metadata = { format: 'tfrecord', files: files.length };
  }

  /** Checks the options and lists the files (a directory is listed now, once). */
  static async open(options: TFRecordDataReaderOptions): Promise<TFRecordDataReader> {
    const o = checkObject(options, 'options');
    for (const key of Object.keys(o)) {
      if (!['dataDir', 'files', 'compression', 'maxOpenFiles', 'batchBytes'].includes(key)) {
        throw new TypeError(
          expectedMessage(
            'one of dataDir, files, compression, maxOpenFiles, batchBytes',
            'a key of options',
            key,
          ),
        );
      }
    }
    const compression = o.compression ?? 'auto';
    if (!TFRECORD_COMPRESSIONS.includes(compression as TFRecordCompressionOption)) {
      throw new TypeError(
        expectedMessage(
          TFRECORD_COMPRESSIONS.map((c) => `'${c}'`).join(', '),
          'options.compression',
          compression,
        ),
      );
    }
    const maxOpenFiles = checkOptionalInteger(o.maxOpenFiles, 'options.maxOpenFiles', 16, 1, 65_536);
    const batchBytes = checkOptionalInteger(o.batchBytes, 'options.batchBytes', MIB, 1, 2 ** 31);
    if ((o.dataDir === undefined) === (o.files === undefined)) {
      throw new TypeError(expectedMessage('exactly one of dataDir and files', 'options', o));
    }
    let files: string[];
    let dataDir: string | undefined;
    if (o.dataDir !== undefined) {
      dataDir = resolve(checkNonEmptyString(o.dataDir, 'options.dataDir'));
      files = await listTFRecordFiles(dataDir);
    } else {
      if (!Array.isArray(o.files) || o.files.length === 0) {
        throw new TypeError(expectedMessage('a non-empty array of paths', 'options.files', o.files));
      }
      files = [...new Set(o.files.map((f, i) => resolve(checkNonEmptyString(f, `options.files[${i}]`))))];
    }
    files.sort(compareCodeUnits);
    return new TFRecordDataReader(
      files,
      dataDir,
      compression as TFRecordCompressionOption,
      maxOpenFiles,
      batchBytes,
    );
  }

  /** The files, in shard order. */
  get files(): readonly string[] {
    return this.#files;
  }

  /** One shard `{ name: path, start: 0, count }` per file that has records. */
  async createShards(): Promise<Shard[]> {
    this.#checkOpen();
    const shards: Shard[] = [];
    for (const path of this.#files) {
      const reader = await this.#cache.acquire(path);
      try {
        const fault = reader.tailFault();
        if (fault !== undefined) throw fault;
        if (reader.numRecords > 0) shards.push({ name: path, start: 0, count: reader.numRecords });
      } finally {
        this.#cache.release(path);
      }
    }
    return shards;
  }

  /** Records `[range.start, range.end)` of the file `range.shardName`, a batch at a time. */
  async *readBatches(range: RecordRange): AsyncGenerator<RecordBatch> {
    this.#checkOpen();
    const { shardName, start, end } = checkFileRange(
      range,
      (path) => this.#owns(path),
      this.#dataDir ?? `${this.#files.length} files`,
    );
    const reader = await this.#cache.acquire(shardName);
    try {
      checkWithinFile(shardName, start, end, reader.numRecords);
      if (end <= start) return;
      yield* reader.batches(start, end - start);
    } finally {
      this.#cache.release(shardName);
    }
  }

  /** Records `[range.start, range.end)` of the file `range.shardName`, as views (never released). */
  readRecords(range: RecordRange): AsyncGenerator<Uint8Array> {
    return recordsOfBatches(this.readBatches(range));
  }

  /** `{ type: 'tfrecord', params }`, for `createDataReader`. */
  describe(): ReaderDescription {
    const params: JsonObject =
      this.#dataDir !== undefined ? { dataDir: this.#dataDir } : { files: [...this.#files] };
    params.compression = this.#compression;
    params.maxOpenFiles = this.#maxOpenFiles;
    params.batchBytes = this.#batchBytes;
    return { type: 'tfrecord', params };
  }

  /** Closes every open file. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#cache.closeAll();
  }

  #owns(path: string): boolean {
    if (this.#files.includes(path)) return true;
    return this.#dataDir !== undefined && dirname(path) === this.#dataDir && isTFRecordPath(path);
  }

  #checkOpen(): void {
    if (this.#closed) {
      throw new DataReaderError('CLOSED', `the TFRecord reader of ${this.#dataDir ?? 'its files'} is closed`);
    }
  }
}

/** The TFRecord files directly in `dataDir` (by extension; hidden files skipped). */
export function listTFRecordFiles(dataDir: string): Promise<string[]> {
  return listDataFiles(
    dataDir,
    isTFRecordPath,
    `${dataDir} holds no TFRecord file (${TFRECORD_EXTENSIONS.join(', ')})`,
  );
}
