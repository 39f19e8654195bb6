import { closeSync, createWriteStream, mkdtempSync, openSync, writeSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { finished } from 'node:stream/promises';
import { createDeflate, createGzip, type Deflate, type Gzip } from 'node:zlib';
import { checkInteger, checkNonEmptyString, checkOneOf, checkOptions, expectedMessage } from '@edl/common';
import { schemeOf } from '@edl/storage';
import { checkRecord } from '../check-record.js';
import { getAddon } from '../native/load-addon.js';
import { uploadDataFile } from '../upload-data-file.js';
import type { TFRecordCompression } from './compression.js';
import { TFRecordError } from './tfrecord-error.js';

/** Options of {@link TFRecordWriter.create}. */
export interface TFRecordWriterOptions {
  /** `none` (default), or the whole stream compressed as TensorFlow's `TFRecordOptions` does. */
  readonly compression?: TFRecordCompression;
  /** Compression level 0 (stored) to 9 (default 6). */
  readonly level?: number;
}

const OPTION_KEYS = ['compression', 'level'];
const FLUSH_BYTES = 1024 * 1024;
const encoder = new TextEncoder();

/**
 * Writes a TFRecord file that TensorFlow's `tf.data.TFRecordDataset` reads (with
 * `compression_type` `''`, `'GZIP'` or `'ZLIB'` to match `compression`). Records are buffered and
 * framed natively a MiB at a time; a compressed file goes through Node's streaming zlib, so memory
 * stays bounded by the buffer plus what the file stream has not yet written.
 *
 * An `s3://bucket/key` location is written to a file in a temporary directory (`os.tmpdir()`: it
 * needs the object's size in free disk, never memory), then uploaded by `close()` through
 * @edl/storage's sink: multipart above 8 MiB, committed whole or not at all, so a failed write or
 * upload leaves no object (and no pending upload). An uncompressed object gets its sidecar index
 * `<key>.idx` too (docs/recordio.md), uploaded after it. The temporary directory is removed by
 * `close()`, whatever happens.
 *
 * ```ts
 * const writer = TFRecordWriter.create('train.tfrecord');
 * writer.write(exampleBytes);
 * await writer.close();
 * ```
 */
export class TFRecordWriter {
  /** Where the records go, as given: a path, or an `s3://` URL. */
  readonly path: string;
  readonly compression: TFRecordCompression;
  #fd: number | undefined;
  readonly #zlib: Gzip | Deflate | undefined;
  readonly #done: Promise<void> | undefined;
  #parts: Uint8Array[] = [];
  #partBytes = 0;
  #records = 0;
  #bytes = 0;
  #closed = false;
  #failure: unknown;
  /** For an object location: the temporary directory holding the file uploaded by `close()`. */
  readonly #staging: string | undefined;

  private constructor(path: string, compression: TFRecordCompression, level: number) {
    this.path = path;
    this.compression = compression;
    const scheme = schemeOf(path);
    let file = path;
    if (scheme !== undefined && scheme !== 'file') {
      if (scheme !== 's3') {
        throw new TFRecordError(
          'IO',
          `cannot create: ${scheme}: objects cannot be written (writable: paths, s3:)`,
          {
            path,
          },
        );
      }
      this.#staging = mkdtempSync(join(tmpdir(), 'edl-tfrecord-'));
      file = join(this.#staging, 'data.tfrecord');
    }
    if (compression === 'none') {
      try {
        this.#fd = openSync(file, 'w');
      } catch (error) {
        throw new TFRecordError('IO', `cannot create: ${(error as Error).message}`, { path, cause: error });
      }
      return;
    }
    const out = createWriteStream(file);
    const z = compression === 'gzip' ? createGzip({ level }) : createDeflate({ level });
    z.pipe(out);
    z.on('error', (error) => {
      this.#failure ??= error;
    });
    out.on('error', (error) => {
      this.#failure ??= error;
      z.destroy();
    });
    this.#zlib = z;
    this.#done = finished(out);
    this.#done.catch(() => {});
  }

  /** Creates (truncates) `path`: a local path, or an `s3://bucket/key` object uploaded by `close()`. */
  static create(path: string, options?: TFRecordWriterOptions): TFRecordWriter {
    const file = checkNonEmptyString(path, 'path');
    const o = checkOptions(options, 'options', OPTION_KEYS);
    const compression = checkOneOf(o.compression ?? 'none', 'options.compression', [
      'none',
      'gzip',
      'zlib',
    ] as const);
    const level = checkInteger(o.level ?? 6, 'options.level', 0, 9);
    return new TFRecordWriter(file, compression, level);
  }

  /** Records written so far (buffered ones included). */
  get recordsWritten(): number {
    return this.#records;
  }

  /** Framed bytes handed to the file (before compression) so far. */
  get bytesWritten(): number {
    return this.#bytes;
  }

  /** Appends one record (a string is written as UTF-8). */
  write(record: Uint8Array | string): void {
    this.#checkOpen();
    const r = checkRecord(record, 'record');
    const bytes = typeof r === 'string' ? encoder.encode(r) : r;
    // A copy: the caller may reuse its buffer as soon as write returns.
    this.#parts.push(bytes.slice());
    this.#partBytes += bytes.length;
    this.#records++;
    if (this.#partBytes >= FLUSH_BYTES) this.#flush();
  }

  /** Appends the records `[bounds[2i], bounds[2i + 1])` of `data` (a RecordBatch's layout). */
  writeBatch(data: Uint8Array, bounds: Uint32Array): void {
    this.#checkOpen();
    if (!(data instanceof Uint8Array)) throw new TypeError(expectedMessage('a Uint8Array', 'data', data));
    if (!(bounds instanceof Uint32Array) || bounds.length % 2 !== 0) {
      throw new TypeError(expectedMessage('a Uint32Array of [begin, end) pairs', 'bounds', bounds));
    }
    for (let i = 0; i < bounds.length; i += 2) {
      const b = bounds[i] as number;
      const e = bounds[i + 1] as number;
      if (b > e || e > data.length) {
        throw new RangeError(
          expectedMessage(`offsets within the ${data.length} bytes of data`, `bounds[${i}..${i + 1}]`, [
            b,
            e,
          ]),
        );
      }
    }
    this.#flush();
    this.#emit(getAddon().tfrecordEncode(data, bounds));
    this.#records += bounds.length / 2;
  }

  /** Frames and writes the buffered records now (a reader following the file sees them). */
  flush(): void {
    this.#checkOpen();
    this.#flush();
  }

  /**
   * Writes what is buffered and closes the file; resolves when every byte is on disk, or, for an
   * `s3://` location, once the object (and its sidecar index) is uploaded. Idempotent.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    try {
      let unflushed: unknown;
      try {
        this.#flush();
      } catch (error) {
        unflushed = error;
      }
      // The file is closed whatever happened; nothing is uploaded unless every record was written.
      await this.#closeFile();
      if (unflushed !== undefined) throw unflushed;
      if (this.#staging !== undefined) await this.#upload(this.#staging);
    } finally {
      if (this.#staging !== undefined) await rm(this.#staging, { recursive: true, force: true });
    }
  }

  async #closeFile(): Promise<void> {
    if (this.#fd !== undefined) {
      const fd = this.#fd;
      this.#fd = undefined;
      closeSync(fd);
      return;
    }
    this.#zlib?.end();
    try {
      await this.#done;
    } catch (error) {
      this.#failure ??= error;
    }
    if (this.#failure !== undefined) throw this.#ioError(this.#failure);
  }

  /** Uploads the staged file as the object, with its sidecar index when uncompressed. */
  async #upload(staging: string): Promise<void> {
    const format = this.compression === 'none' ? 'tfrecord' : undefined;
    try {
      await uploadDataFile(join(staging, 'data.tfrecord'), this.path, format);
    } catch (error) {
      const reason = error as { code?: string; detail?: string; message?: string };
      throw new TFRecordError(
        'IO',
        `cannot upload: ${reason.detail ?? reason.message}${reason.code === undefined ? '' : ` (${reason.code})`}`,
        { path: this.path, cause: error },
      );
    }
  }

  #flush(): void {
    if (this.#parts.length === 0) return;
    const parts = this.#parts;
    const data = new Uint8Array(this.#partBytes);
    const bounds = new Uint32Array(2 * parts.length);
    let at = 0;
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as Uint8Array;
      data.set(part, at);
      bounds[2 * i] = at;
      at += part.length;
      bounds[2 * i + 1] = at;
    }
    this.#parts = [];
    this.#partBytes = 0;
    this.#emit(getAddon().tfrecordEncode(data, bounds));
  }

  #emit(framed: Uint8Array): void {
    if (this.#failure !== undefined) throw this.#ioError(this.#failure);
    if (this.#fd !== undefined) {
      try {
        let done = 0;
        while (done < framed.length) done += writeSync(this.#fd, framed, done, framed.length - done);
      } catch (error) {
        throw this.#ioError(error);
      }
    } else {
      this.#zlib?.write(framed);
    }
    this.#bytes += framed.length;
  }

  #ioError(error: unknown): TFRecordError {
    return new TFRecordError('IO', `cannot write: ${(error as Error).message}`, {
      path: this.path,
      cause: error,
    });
  }

  #checkOpen(): void {
    if (this.#closed) throw new TFRecordError('CLOSED', 'the TFRecord writer is closed', { path: this.path });
  }
}
