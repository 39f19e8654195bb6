import { getAddon } from '../native/load-addon.js';
import { RecordBatch } from '../record-batch.js';
import { TFRecordError } from './tfrecord-error.js';

/** Smallest frame: 12-byte header + 4-byte data CRC around an empty record. */
const MIN_FRAME = 16;
const MAX_RECORD_SIZE = 2 ** 32 - 1 - MIN_FRAME;

/** Where {@link decodeFrameStream} reads and what it delivers. */
export interface FrameStreamOptions {
  /** For error messages. */
  readonly path: string;
  /** Whether the bytes come out of a decompressor (error offsets are then stream offsets). */
  readonly compressed: boolean;
  /** First record to deliver; the ones before are skipped (their data CRCs are not checked). */
  readonly start: number;
  /** Records to deliver at most (Infinity: to the end). */
  readonly count: number;
  /** Records per batch at most. */
  readonly batchRecords: number;
}

/**
 * Cuts a stream of TFRecord bytes (a file's, or a decompressor's output) into batches of verified
 * records. Each batch holds its own copy of its frames, so nothing it yields is overwritten later.
 * A bad frame ends the stream with a {@link TFRecordError} after every record before it; so does
 * a stream that ends inside a frame (`TRUNCATED`), or a failing source (its error is the cause).
 */
export async function* decodeFrameStream(
  source: AsyncIterable<Uint8Array>,
  options: FrameStreamOptions,
): AsyncGenerator<RecordBatch> {
  const addon = getAddon();
  const { path, compressed, start, count, batchRecords } = options;
  const end = start + count;
  let pending = new Uint8Array(1 << 16);
  let length = 0;
  /** Stream offset of pending[0]. */
  let position = 0;
  /** Index of the record at pending[0]. */
  let index = 0;
  const fail = (code: 'TRUNCATED' | 'BAD_COMPRESSION' | 'IO', detail: string, cause?: unknown) =>
    new TFRecordError(code, detail, { path, record: index, offset: position, compressed, cause });

  const iterator = source[Symbol.asyncIterator]();
  try {
    for (;;) {
      let chunk: IteratorResult<Uint8Array>;
      try {
        chunk = await iterator.next();
      } catch (error) {
        throw sourceError(error, fail);
      }
      if (chunk.done) break;
      const bytes = chunk.value;
      if (length + bytes.length > pending.length) {
        const grown = new Uint8Array(Math.max(pending.length * 2, length + bytes.length));
        grown.set(pending.subarray(0, length));
        pending = grown;
      }
      pending.set(bytes, length);
      length += bytes.length;
      // Decode every whole frame now in the buffer, a batch at a time.
      for (;;) {
        if (index >= end) return;
        const skipping = index < start;
        const want = skipping ? start - index : Math.min(batchRecords, end - index);
        const capacity = Math.min(want, Math.floor(length / MIN_FRAME) + 1);
        const bounds = new Uint32Array(2 * capacity);
        const view = pending.subarray(0, length);
        const r = addon.tfrecordDecode(view, position, capacity, bounds, !skipping, MAX_RECORD_SIZE);
        if (r.records > 0 && !skipping) {
          const data = pending.slice(0, r.consumed);
          yield new RecordBatch(data, bounds.subarray(0, 2 * r.records), index);
        }
        index += r.records;
        if (r.fault !== undefined) {
          position += r.consumed;
          throw TFRecordError.fromFault(r.fault, path, index, compressed);
        }
        pending.copyWithin(0, r.consumed, length);
        length -= r.consumed;
        position += r.consumed;
        if (r.records < capacity || r.needMore || length < MIN_FRAME) break;
      }
    }
    if (index < end && length > 0) {
      throw fail('TRUNCATED', `stream ends inside a record (${length} bytes of a frame)`);
    }
  } finally {
    await iterator.return?.();
  }
}

/** A decompressor's or a file's error, as a TFRecordError at the current position. */
function sourceError(
  error: unknown,
  fail: (code: 'TRUNCATED' | 'BAD_COMPRESSION' | 'IO', detail: string, cause?: unknown) => TFRecordError,
): TFRecordError {
  const e = error as NodeJS.ErrnoException;
  const message = e instanceof Error ? e.message : String(error);
  if (e?.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(message)) {
    return fail('TRUNCATED', `compressed stream ends early: ${message}`, error);
  }
  if (typeof e?.code === 'string' && e.code.startsWith('Z_')) {
    return fail('BAD_COMPRESSION', `cannot decompress: ${message}`, error);
  }
  return fail('IO', `cannot read: ${message}`, error);
}
