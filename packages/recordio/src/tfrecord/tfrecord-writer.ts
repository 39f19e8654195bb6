import { closeSync, createWriteStream, openSync, writeSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import { createDeflate, createGzip, type Deflate, type Gzip } from 'node:zlib';
import { checkInteger, checkNonEmptyString, checkOneOf, checkOptions, expectedMessage } from '@edl/common';
import { checkRecord } from '../check-record.js';
import { getAddon } from '../native/load-addon.js';
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
 * ```ts
 * const writer = TFRecordWriter.create('train.tfrecord');
 * writer.write(exampleBytes);
 * await writer.close();
 * ```
 */
export class TFRecordWriter {
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

  private constructor(path: string, compression: TFRecordCompression, level: number) {
    this.path = path;
    this.compression = compression;
    if (compression === 'none') {
      try {
        this.#fd = openSync(path, 'w');
      } catch (error) {
        throw new TFRecordError('IO', `cannot create: ${(error as Error).message}`, { path, cause: error });
      }
      return;
    }
    const out = createWriteStream(path);
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

  /** Creates (truncates) `path`. */
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

  /** Writes what is buffered and closes the file; resolves when every byte is on disk. Idempotent. */
  /** Frames and writes the buffered records now (a reader following the file sees them). */
  flush(): void {
    this.#checkOpen();
    this.#flush();
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
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
