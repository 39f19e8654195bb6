import { extname } from 'node:path';
import { checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import {
  type RecordBatch,
  TFRECORD_COMPRESSIONS,
  type TFRecordCompressionOption,
  TFRecordReader,
} from '@edl/recordio';
import type { JsonObject, RecordRange } from '../protocols.js';
import {
  FileDataReader,
  type FileFormat,
  type FileList,
  type FileReaderOptions,
  type RemoteSettings,
} from './file-data-reader.js';
import { listDataFiles } from './file-shards.js';

/** File name extensions of TFRecord files (a trailing `.gz`/`.zz`/`.zlib` is allowed after them). */
export const TFRECORD_EXTENSIONS: readonly string[] = ['.tfrecord', '.tfrecords', '.tfrec'];

/**
 * Options of {@link TFRecordDataReader.open}: exactly one of `dataDir` (its TFRecord files, by
 * extension, see {@link isTFRecordPath}) and `files`, as {@link FileReaderOptions}.
 */
export type TFRecordDataReaderOptions = FileReaderOptions & {
  /** How the files are stored; `auto` (default) tells each file from its first bytes. */
  readonly compression?: TFRecordCompressionOption;
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

const TFRECORD: FileFormat = {
  type: 'tfrecord',
  name: 'TFRecord',
  accepts: isTFRecordPath,
  noFiles: (dataDir) => `${dataDir} holds no TFRecord file (${TFRECORD_EXTENSIONS.join(', ')})`,
};

const OPTION_KEYS = ['dataDir', 'files', 'compression', 'maxOpenFiles', 'batchBytes', 'remote'];

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
export class TFRecordDataReader extends FileDataReader<TFRecordReader> {
  /**
   * Announces that `readRecords(range)` will follow, for a remote file: its blocks are fetched
   * ahead within `remote.readAheadBytes`. Advisory. Present only when some files are remote (local
   * files are read when asked: a positioned read of uncompressed frames needs no read-ahead).
   */
  readonly prefetch?: (range: RecordRange) => void;
  readonly #compression: TFRecordCompressionOption;
  readonly #batchBytes: number;

  private constructor(
    files: FileList,
    compression: TFRecordCompressionOption,
    maxOpenFiles: number,
    batchBytes: number,
    remote: RemoteSettings,
  ) {
    super(TFRECORD, files, maxOpenFiles, remote);
    this.#compression = compression;
    this.#batchBytes = batchBytes;
    if (this.hasRemoteFiles) {
      this.prefetch = (range) => {
        this.announceRemote(range);
      };
    }
  }

  /** Checks the options and lists the files (a directory is listed now, once). */
  static async open(options: TFRecordDataReaderOptions): Promise<TFRecordDataReader> {
    const o = checkObject(options, 'options');
    for (const key of Object.keys(o)) {
      if (!OPTION_KEYS.includes(key)) {
        throw new TypeError(expectedMessage(`one of ${OPTION_KEYS.join(', ')}`, 'a key of options', key));
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
    const maxOpenFiles = FileDataReader.checkMaxOpenFiles(o);
    const batchBytes = checkOptionalInteger(o.batchBytes, 'options.batchBytes', MIB, 1, 2 ** 31);
    const remote = FileDataReader.checkRemote(o);
    const files = await FileDataReader.listFiles(o, TFRECORD);
    return new TFRecordDataReader(
      files,
      compression as TFRecordCompressionOption,
      maxOpenFiles,
      batchBytes,
      remote,
    );
  }

  protected override openFile(path: string): Promise<TFRecordReader> {
    return TFRecordReader.open(path, { compression: this.#compression, batchBytes: this.#batchBytes });
  }

  /** A damaged file fails `createShards`: its records past the damage would be left out silently. */
  protected override checkWhole(reader: TFRecordReader): void {
    const fault = reader.tailFault();
    if (fault !== undefined) throw fault;
  }

  /** Records `[start, end)` of the file, a batch at a time. */
  protected override batchesOf(
    reader: TFRecordReader,
    _location: string,
    start: number,
    end: number,
  ): AsyncIterable<RecordBatch> {
    return reader.batches(start, end - start);
  }

  protected override formatParams(): JsonObject {
    return { compression: this.#compression, maxOpenFiles: this.maxOpenFiles, batchBytes: this.#batchBytes };
  }
}

/** The TFRecord files directly in `dataDir` (by extension; hidden and sidecar files skipped), as absolute locations. */
export async function listTFRecordFiles(dataDir: string): Promise<string[]> {
  const objects = await listDataFiles(dataDir, TFRECORD.accepts, TFRECORD.noFiles(dataDir));
  return objects.map((object) => object.location);
}
