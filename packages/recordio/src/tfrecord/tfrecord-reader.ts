import {
  close as closeFd,
  closeSync,
  createReadStream,
  open as openFd,
  read as readFd,
  readSync,
} from 'node:fs';
import { stat } from 'node:fs/promises';
import { pipeline } from 'node:stream';
import { promisify } from 'node:util';
import { createGunzip, createInflate } from 'node:zlib';
import { checkInteger, checkOneOf } from '@edl/common';
import { FileReader } from '../file-reader.js';
import type { NativeTFRecordDecode } from '../native/addon-types.js';
import { getAddon } from '../native/load-addon.js';
import { type BatchRecycler, RecordBatch } from '../record-batch.js';
import {
  detectCompression,
  TFRECORD_COMPRESSIONS,
  type TFRecordCompression,
  type TFRecordCompressionOption,
} from './compression.js';
import { decodeFrameStream } from './frame-stream.js';
import { StreamCursor } from './stream-cursor.js';
import { TFRecordError } from './tfrecord-error.js';

const openAsync = promisify(openFd);
const readAsync = promisify(readFd);
const closeAsync = promisify(closeFd);

/** Options of {@link TFRecordReader.open}. */
export interface TFRecordReaderOptions {
  /**
   * How the file is stored (default `auto`: a valid record header means `none`, else the gzip or
   * zlib header is looked for; a `.gz` name alone does not decide).
   */
  readonly compression?: TFRecordCompressionOption;
  /** Bytes one read of {@link TFRecordReader.batches} aims at (default 1 MiB; at least one record). */
  readonly batchBytes?: number;
  /** Records per batch at most (default 65536). */
  readonly batchRecords?: number;
}

const OPTION_KEYS = ['compression', 'batchBytes', 'batchRecords'];
const MIB = 1024 * 1024;
const MAX_RECORD_SIZE = 2 ** 32 - 1 - 16;
/** Decompressed chunk size: larger than zlib's 16 KiB default so batches are not tiny. */
const ZLIB_CHUNK = 256 * 1024;

/**
 * Reads a TFRecord file (TensorFlow's `TFRecordWriter` format, uncompressed or with its whole
 * stream GZIP- or ZLIB-compressed). Both CRCs of every record are checked.
 *
 * - **Uncompressed** files are indexed at open by a scan of the record headers (one read per MiB
 *   of small records): `numRecords`, random access (`get`, `read`, `readSync`) and shards come
 *   from the index.
 * - **Compressed** files cannot be seeked into: they are decompressed once at open to count their
 *   records (and find damage), and every read decompresses from the start of the file, passing over
 *   the records before the range. Random access (`get`, `read`, `readSync`) throws `NOT_SEEKABLE`;
 *   `batches()` and `records()` work on any range. Decompress a file that must be read at random
 *   (`edl tfrecord cat --compression gzip FILE > plain.tfrecord` is not needed: write it back with
 *   {@link TFRecordWriter} and `compression: 'none'`).
 *
 * A damaged file still opens: `numRecords` counts the records before the damage and
 * {@link TFRecordReader.tailFault} describes it; a read that reaches it delivers every record
 * before it, then throws a {@link TFRecordError} that names the record, the byte offset and the file.
 */
export class TFRecordReader extends FileReader {
  /** How the file is stored (resolved when `auto`). */
  readonly compression: TFRecordCompression;
  readonly #offsets: Float64Array | undefined;
  readonly #tailFault: TFRecordError | undefined;
  readonly #batchBytes: number;
  readonly #batchRecords: number;
  #fd: number | undefined;
  /** The decompressing stream of a compressed file, left where the last range ended. */
  readonly #stream = new StreamCursor((start) =>
    decodeFrameStream(decompressed(this.path, this.compression), {
      path: this.path,
      compressed: true,
      start,
      count: Number.POSITIVE_INFINITY,
      batchRecords: this.#batchRecords,
    }),
  );
  #spare: ArrayBuffer | undefined;
  readonly #recycle: BatchRecycler = (data) => {
    if (
      this.#fd !== undefined &&
      data instanceof ArrayBuffer &&
      (this.#spare?.byteLength ?? 0) < data.byteLength
    ) {
      this.#spare = data;
    }
  };

  private constructor(
    path: string,
    compression: TFRecordCompression,
    numRecords: number,
    fileSize: number,
    offsets: Float64Array | undefined,
    tailFault: TFRecordError | undefined,
    fd: number | undefined,
    batchBytes: number,
    batchRecords: number,
  ) {
    super({ path, numRecords, fileSize }, TFRecordError, 'the TFRecord reader is closed');
    this.compression = compression;
    this.#offsets = offsets;
    this.#tailFault = tailFault;
    this.#fd = fd;
    this.#batchBytes = batchBytes;
    this.#batchRecords = batchRecords;
  }

  /**
   * Opens `path`: indexes an uncompressed file by its headers, or decompresses a compressed one once
   * to count its records.
   *
   * @throws TypeError / RangeError for bad arguments; {@link TFRecordError} `IO` when the file cannot
   * be read, `BAD_COMPRESSION` when `auto` cannot tell what the file is.
   */
  static async open(path: string, options?: TFRecordReaderOptions): Promise<TFRecordReader> {
    const { file, options: o } = FileReader.checkOpenArguments(path, options, OPTION_KEYS);
    const wanted = checkOneOf(o.compression ?? 'auto', 'options.compression', TFRECORD_COMPRESSIONS);
    const batchBytes = FileReader.batchBytesOption(o.batchBytes, MIB);
    const batchRecords = checkInteger(o.batchRecords ?? 65_536, 'options.batchRecords', 1, 2 ** 24);
    let fd: number;
    try {
      fd = await openAsync(file, 'r');
    } catch (error) {
      throw new TFRecordError('IO', `cannot open: ${(error as Error).message}`, { path: file, cause: error });
    }
    try {
      let compression: TFRecordCompression;
      if (wanted === 'auto') {
        const head = new Uint8Array(16);
        const { bytesRead } = await readAsync(fd, head, 0, 16, 0);
        const detected = detectCompression(head.subarray(0, bytesRead));
        if (detected === undefined) {
          throw new TFRecordError(
            'BAD_COMPRESSION',
            'neither a TFRecord record header nor a gzip or zlib stream at the start of the file',
            { path: file, offset: 0 },
          );
        }
        compression = detected;
      } else {
        compression = wanted;
      }
      if (compression === 'none') {
        const scan = await getAddon().tfrecordScan(file);
        const numRecords = scan.offsets.length - 1;
        const fault =
          scan.fault === undefined ? undefined : TFRecordError.fromFault(scan.fault, file, numRecords);
        return new TFRecordReader(
          file,
          compression,
          numRecords,
          scan.fileSize,
          scan.offsets,
          fault,
          fd,
          batchBytes,
          batchRecords,
        );
      }
      await closeAsync(fd);
      let numRecords = 0;
      let fault: TFRecordError | undefined;
      try {
        const stream = decodeFrameStream(decompressed(file, compression), {
          path: file,
          compressed: true,
          start: 0,
          count: Number.POSITIVE_INFINITY,
          batchRecords,
        });
        for await (const batch of stream) numRecords += batch.length;
      } catch (error) {
        if (!(error instanceof TFRecordError)) throw error;
        fault = error;
      }
      const { size } = await stat(file);
      return new TFRecordReader(
        file,
        compression,
        numRecords,
        size,
        undefined,
        fault,
        undefined,
        batchBytes,
        batchRecords,
      );
    } catch (error) {
      await closeAsync(fd).catch(() => {});
      throw error;
    }
  }

  /** Whether random access works (uncompressed files). */
  get seekable(): boolean {
    return this.#offsets !== undefined;
  }

  /**
   * The damage that ends the readable part of the file (a bad header, a file cut inside a record,
   * a broken compressed stream), or undefined for a sound file. Data CRC faults inside the
   * readable part of an uncompressed file are only found when the record is read.
   */
  tailFault(): TFRecordError | undefined {
    return this.#tailFault;
  }

  /** Byte offset of record `index` in an uncompressed file (`index = numRecords`: the end). */
  recordOffset(index: number): number {
    const offsets = this.#seekable('recordOffset');
    checkInteger(index, 'index', 0, this.numRecords);
    return offsets[index] as number;
  }

  /**
   * Records `[start, start + count)` of an uncompressed file, read on the calling thread.
   *
   * @throws TFRecordError `NOT_SEEKABLE` for a compressed file; `CHECKSUM`/`TRUNCATED`/`IO` for a
   * bad record in the range (use {@link TFRecordReader.batches} to get the records before it).
   */
  readSync(start: number, count: number): RecordBatch {
    const { batch, fault } = this.#readRangeSync(start, count);
    if (fault !== undefined) throw fault;
    return batch;
  }

  /** {@link TFRecordReader.readSync} on the libuv thread pool. */
  async read(start: number, count: number): Promise<RecordBatch> {
    const { batch, fault } = await this.#readRange(start, count);
    if (fault !== undefined) throw fault;
    return batch;
  }

  /** Record `index` (a copy-free view into its own small batch). */
  async get(index: number): Promise<Uint8Array> {
    return (await this.read(index, 1)).get(0);
  }

  /** {@link TFRecordReader.get} on the calling thread. */
  getSync(index: number): Uint8Array {
    return this.readSync(index, 1).get(0);
  }

  /**
   * Batches of `[start, start + count)` for `batches()` and `records()`, about `batchBytes` each.
   * Works on compressed files too (decompressing from the start). A bad record ends the iteration
   * with a {@link TFRecordError}, after a batch holding every record before it.
   */
  protected override async *rangeBatches(
    start: number,
    count: number | undefined,
  ): AsyncGenerator<RecordBatch> {
    this.checkOpen();
    checkInteger(start, 'start', 0, this.numRecords);
    const n =
      count === undefined
        ? this.numRecords - start
        : checkInteger(count, 'count', 0, this.numRecords - start);
    if (n === 0) return;
    const offsets = this.#offsets;
    if (offsets === undefined) {
      yield* this.#streamBatches(start, n);
      return;
    }
    const end = start + n;
    let at = start;
    while (at < end) {
      // Records up to batchBytes (at least one), at most batchRecords.
      const limit = (offsets[at] as number) + this.#batchBytes;
      let stop = at + 1;
      const last = Math.min(end, at + this.#batchRecords);
      while (stop < last && (offsets[stop + 1] as number) <= limit) stop++;
      const { batch, fault } = await this.#readRange(at, stop - at);
      if (batch.length > 0) yield batch;
      if (fault !== undefined) throw fault;
      at = stop;
    }
  }

  /**
   * Batches of a compressed file, from a decompressing stream. The stream that ended a range is
   * kept, so that reading the next range (the next task of the same shard) continues it instead of
   * decompressing the file again from its start.
   */
  async *#streamBatches(start: number, count: number): AsyncGenerator<RecordBatch> {
    yield* this.#stream.batches(start, start + count);
  }

  protected override releaseFile(): void {
    const fd = this.#fd;
    this.#fd = undefined;
    this.#spare = undefined;
    this.#stream.close();
    if (fd !== undefined) closeSync(fd);
  }

  #seekable(what: string): Float64Array {
    this.checkOpen();
    if (this.#offsets === undefined) {
      throw new TFRecordError(
        'NOT_SEEKABLE',
        `${what} needs random access, and this file is ${this.compression}-compressed: read it in order with batches() or records(), or write an uncompressed copy`,
        { path: this.path },
      );
    }
    return this.#offsets;
  }

  #prepare(start: number, count: number): { begin: number; span: number; buffer: Uint8Array } {
    const offsets = this.#seekable('a read of a record range');
    checkInteger(start, 'start', 0, this.numRecords);
    checkInteger(count, 'count', 0, this.numRecords - start);
    const begin = offsets[start] as number;
    const span = (offsets[start + count] as number) - begin;
    if (span > MAX_RECORD_SIZE) {
      throw new TFRecordError('TOO_LARGE', `one read of ${span} bytes (at most 4 GiB - 1)`, {
        path: this.path,
        record: start,
        offset: begin,
      });
    }
    const spare = this.#spare;
    let buffer: Uint8Array;
    if (spare !== undefined && spare.byteLength >= span) {
      this.#spare = undefined;
      buffer = new Uint8Array(spare, 0, span);
    } else {
      buffer = new Uint8Array(span);
    }
    return { begin, span, buffer };
  }

  #finish(
    start: number,
    count: number,
    begin: number,
    buffer: Uint8Array,
    got: number,
  ): { batch: RecordBatch; fault: TFRecordError | undefined } {
    const bounds = new Uint32Array(2 * count);
    const r: NativeTFRecordDecode = getAddon().tfrecordDecode(
      buffer.subarray(0, got),
      begin,
      count,
      bounds,
      true,
      MAX_RECORD_SIZE,
    );
    const batch = new RecordBatch(buffer, bounds.subarray(0, 2 * r.records), start, this.#recycle);
    let fault: TFRecordError | undefined;
    if (r.fault !== undefined) {
      fault = TFRecordError.fromFault(r.fault, this.path, start + r.records);
    } else if (r.records < count) {
      fault = new TFRecordError('TRUNCATED', 'the file is shorter than when it was indexed', {
        path: this.path,
        record: start + r.records,
        offset: begin + r.consumed,
      });
    }
    return { batch, fault };
  }

  #readError(error: unknown, offset: number): TFRecordError {
    return new TFRecordError('IO', `cannot read: ${(error as Error).message}`, {
      path: this.path,
      offset,
      cause: error,
    });
  }

  #readRangeSync(start: number, count: number): { batch: RecordBatch; fault: TFRecordError | undefined } {
    const { begin, span, buffer } = this.#prepare(start, count);
    let got = 0;
    try {
      while (got < span) {
        const n = readSync(this.#fd as number, buffer, got, span - got, begin + got);
        if (n === 0) break;
        got += n;
      }
    } catch (error) {
      throw this.#readError(error, begin + got);
    }
    return this.#finish(start, count, begin, buffer, got);
  }

  async #readRange(
    start: number,
    count: number,
  ): Promise<{ batch: RecordBatch; fault: TFRecordError | undefined }> {
    const { begin, span, buffer } = this.#prepare(start, count);
    const fd = this.#fd as number;
    let got = 0;
    try {
      while (got < span) {
        const { bytesRead } = await readAsync(fd, buffer, got, span - got, begin + got);
        if (bytesRead === 0) break;
        got += bytesRead;
      }
    } catch (error) {
      throw this.#readError(error, begin + got);
    }
    return this.#finish(start, count, begin, buffer, got);
  }
}

/** The decompressed bytes of a gzip or zlib file, as a stream. */
export function decompressed(path: string, compression: TFRecordCompression): AsyncIterable<Uint8Array> {
  const file = createReadStream(path, { highWaterMark: MIB });
  if (compression === 'none') return file;
  const inflate =
    compression === 'gzip'
      ? createGunzip({ chunkSize: ZLIB_CHUNK })
      : createInflate({ chunkSize: ZLIB_CHUNK });
  // pipeline: a file error reaches the consumer through inflate, and a consumer that stops early
  // (destroying inflate) closes the file.
  return pipeline(file, inflate, () => {});
}
