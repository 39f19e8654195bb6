import { checkInteger, checkNonEmptyString, checkOptions } from '@edl/common';
import {
  type CallSite,
  captureCallSite,
  type RecordIOError,
  type RecordIOErrorLocation,
  withCallSite,
} from './errors.js';
import type { RecordBatch } from './record-batch.js';
import { RecordIterator } from './record-iterator.js';

/** The most bytes one batch read may aim at. */
const MAX_BATCH_BYTES = 2 ** 31;

/** The error class of a format (RecordIOError, or a subclass such as TFRecordError). */
type FormatError = new (code: 'CLOSED', detail: string, location: RecordIOErrorLocation) => RecordIOError;

/** What a format's open found: the file, its size and its records. */
export interface OpenedFileInfo {
  readonly path: string;
  readonly numRecords: number;
  readonly fileSize: number;
}

/**
 * What the native file readers of @edl/recordio (RecordIO, TFRecord) share: the file's path, size
 * and record count, the checks of `open`'s arguments, an idempotent close (also for `using` and
 * `await using`) and the `CLOSED` error after it, and `batches()` / `records()` over the format's
 * batches of a range: records come one by one from each batch as views, through a hand-written
 * iterator (no generator step per record). A format adds how it opens, indexes and decodes.
 */
export abstract class FileReader implements AsyncDisposable, Disposable {
  /** The file read. */
  readonly path: string;
  /** Records in the file (before the first damage, where a format cannot read past it). */
  readonly numRecords: number;
  /** Size of the file in bytes when it was opened. */
  readonly fileSize: number;
  readonly #ErrorClass: FormatError;
  readonly #closedDetail: string;
  #closed = false;

  /**
   * @param file - what the format's open found.
   * @param ErrorClass - the format's error class, for `CLOSED`.
   * @param closedDetail - what `CLOSED` says.
   */
  protected constructor(file: OpenedFileInfo, ErrorClass: FormatError, closedDetail: string) {
    this.path = file.path;
    this.numRecords = file.numRecords;
    this.fileSize = file.fileSize;
    this.#ErrorClass = ErrorClass;
    this.#closedDetail = closedDetail;
  }

  /** A non-empty `path`, and `options` (an object or undefined) with none but `keys`. */
  protected static checkOpenArguments(
    path: unknown,
    options: unknown,
    keys: readonly string[],
  ): { file: string; options: Record<string, unknown> } {
    return { file: checkNonEmptyString(path, 'path'), options: checkOptions(options, 'options', keys) };
  }

  /** `options.batchBytes`: bytes one read aims at, `fallback` when absent. */
  protected static batchBytesOption(value: unknown, fallback: number): number {
    return value === undefined ? fallback : checkInteger(value, 'options.batchBytes', 1, MAX_BATCH_BYTES);
  }

  /** Whether {@link FileReader.close} was called. */
  get closed(): boolean {
    return this.#closed;
  }

  /**
   * Batches of records `[start, start + count)` in order (`count` defaults to the rest of the
   * file). On a bad record the batch of records before it comes first, then the error. Calling
   * `batch.release()` before asking for the next batch lets the next read reuse its memory (see
   * {@link RecordBatch.release}).
   */
  batches(start = 0, count?: number): AsyncIterableIterator<RecordBatch> {
    return this.rangeBatches(start, count, captureCallSite(this.batches));
  }

  /**
   * Yields records `[start, start + count)` one by one (views into their batch, no copies). On a bad
   * record it first yields every record before it, then throws the error.
   *
   * @param start - first record (default 0).
   * @param count - number of records (default: to the end of the file).
   */
  records(start = 0, count?: number): AsyncIterableIterator<Uint8Array> {
    return new RecordIterator(this.rangeBatches(start, count, captureCallSite(this.records)));
  }

  /** Releases the file. Idempotent; a read in flight finishes first. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.releaseFile();
  }

  /** Same as {@link FileReader.close}, for `using`. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** Same as {@link FileReader.close}, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }

  /** The batches of `batches()` and `records()`; `callSite` is the public call, for error stacks. */
  protected abstract rangeBatches(
    start: number,
    count: number | undefined,
    callSite: Error,
  ): AsyncIterableIterator<RecordBatch>;

  /** Releases the file and what was read of it (called once, by `close`). */
  protected abstract releaseFile(): void;

  /** Throws `CLOSED` after {@link FileReader.close}. */
  protected checkOpen(callSite?: CallSite): void {
    if (this.#closed) {
      throw withCallSite(new this.#ErrorClass('CLOSED', this.#closedDetail, { path: this.path }), callSite);
    }
  }
}
