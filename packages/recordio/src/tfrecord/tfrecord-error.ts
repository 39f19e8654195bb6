import { RecordIOError, type RecordIOErrorCode } from '../errors.js';
import type { NativeFault } from '../native/addon-types.js';

/** Where a {@link TFRecordError} happened. */
export interface TFRecordErrorLocation {
  readonly path?: string | undefined;
  /** Index of the record whose frame is bad (every record before it was delivered). */
  readonly record?: number | undefined;
  /** Byte offset of the bad frame: in the file, or in the decompressed stream when `compressed`. */
  readonly offset?: number | undefined;
  /** Whether `offset` counts bytes of the decompressed stream of a gzip or zlib file. */
  readonly compressed?: boolean | undefined;
  readonly cause?: unknown;
}

/**
 * A failure reading or writing a TFRecord file: a {@link RecordIOError} (same stable codes) whose
 * message names the record, the byte offset and the file, e.g.
 * `CHECKSUM: record 7 at byte 1093 of /data/train.tfrecord: record data CRC mismatch`.
 */
export class TFRecordError extends RecordIOError {
  override readonly name: string = 'TFRecordError';
  /** Index of the record concerned, when known. */
  readonly record: number | undefined;
  /** Whether {@link RecordIOError.offset} is an offset in the decompressed stream. */
  readonly compressed: boolean;

  constructor(code: RecordIOErrorCode, detail: string, location: TFRecordErrorLocation = {}) {
    super(code, detail, { path: location.path, offset: location.offset, cause: location.cause });
    this.record = location.record;
    this.compressed = location.compressed === true;
    const where: string[] = [];
    if (location.record !== undefined) where.push(`record ${location.record}`);
    if (location.offset !== undefined) {
      where.push(`at byte ${location.offset}${this.compressed ? ' of the decompressed stream' : ''}`);
    }
    if (location.path !== undefined) where.push(where.length > 0 ? `of ${location.path}` : location.path);
    const text = detail.replace(/\s*\n\s*/g, ' ');
    this.message = where.length > 0 ? `${code}: ${where.join(' ')}: ${text}` : `${code}: ${text}`;
  }

  /** Rebuilds a fault of the addon (its offset is absolute) for `path`. */
  static fromFault(
    fault: NativeFault,
    path: string,
    record: number | undefined,
    compressed = false,
  ): TFRecordError {
    return new TFRecordError(fault.code as RecordIOErrorCode, fault.message, {
      path,
      record,
      offset: fault.offset >= 0 ? fault.offset : undefined,
      compressed,
    });
  }
}
