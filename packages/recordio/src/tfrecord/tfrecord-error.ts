import { type FaultLocation, faultMessage, RecordIOError, type RecordIOErrorCode } from '../errors.js';
import type { NativeFault } from '../native/addon-types.js';

/** Where a {@link TFRecordError} happened (`offset`: of the bad frame). */
export interface TFRecordErrorLocation extends FaultLocation {
  /** Index of the record whose frame is bad (every record before it was delivered). */
  readonly record?: number | undefined;
  /** Whether `offset` counts bytes of the decompressed stream of a gzip or zlib file. */
  readonly compressed?: boolean | undefined;
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
    this.message = faultMessage(code, detail, where, location.path);
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
