import {
  BLOCK_HEADER_BYTES,
  type ChunkInfo,
  compressorName,
  detectCompression,
  RecordIOError,
  recordioSidecarIndex,
  type SidecarIndex,
  sidecarCheck,
  TFRecordError,
  tfrecordRecordsPerBlock,
  tfrecordSidecarIndex,
} from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';

/** What a TFRecord walk found instead of frames: a compressed stream, and the requests that cost. */
export interface CompressedObject {
  readonly compressed: 'gzip' | 'zlib';
}

/** Counts the requests an index costs. */
export interface RequestCounter {
  requests: number;
}

/** The RecordIO chunk header magic, as stored (little-endian 0x01020304). */
const RECORDIO_MAGIC = 0x01020304;
/** Bytes fetched per request by the TFRecord walk, which reads headers a few hundred bytes apart. */
const TFRECORD_WINDOW_BYTES = 1024 * 1024;
/** A TFRecord frame: 12-byte header, data, 4-byte data CRC. */
const FRAME_OVERHEAD = 16;

/**
 * Indexes a remote RecordIO object by its chunk headers: one ranged GET of 20 bytes per chunk, in
 * order (each header says where the next one is), never a payload. A damaged header fails, as the
 * local scan's tail fault would fail a read reaching it, naming the object, chunk and offset.
 */
export async function walkRecordIOHeaders(
  source: ByteSource,
  object: ObjectStat,
  counter: RequestCounter,
): Promise<SidecarIndex> {
  const size = object.size;
  const headerBytes = BLOCK_HEADER_BYTES.recordio;
  const chunks: ChunkInfo[] = [];
  let first: Uint8Array | undefined;
  let last: Uint8Array | undefined;
  let offset = 0;
  let firstRecord = 0;
  while (offset < size) {
    const index = chunks.length;
    const where = { path: object.location, chunk: index, offset };
    if (size - offset < headerBytes) {
      throw new RecordIOError(
        'TRUNCATED',
        `file ends inside a chunk header (${size - offset} of ${headerBytes} bytes)`,
        where,
      );
    }
    counter.requests++;
    const header = await source.readRange(object, offset, headerBytes);
    const view = new DataView(header.buffer, header.byteOffset, header.byteLength);
    const magic = view.getUint32(0, true);
    if (magic !== RECORDIO_MAGIC) {
      throw new RecordIOError('BAD_MAGIC', `bad chunk magic 0x${magic.toString(16).padStart(8, '0')}`, where);
    }
    const compressedSize = view.getUint32(12, true);
    const numRecords = view.getUint32(16, true);
    const present = size - offset - headerBytes;
    if (compressedSize > present) {
      throw new RecordIOError(
        'TRUNCATED',
        `chunk payload runs past the end of the file (${present} of ${compressedSize} bytes present)`,
        where,
      );
    }
    const compressor = compressorName(view.getUint32(8, true));
    chunks.push(Object.freeze({ index, offset, compressor, compressedSize, numRecords, firstRecord }));
    first ??= header;
    last = header;
    firstRecord += numRecords;
    offset += headerBytes + compressedSize;
  }
  const check = sidecarCheck(first ?? new Uint8Array(0), last ?? new Uint8Array(0));
  return recordioSidecarIndex(Object.freeze(chunks), size, check);
}

/**
 * Indexes a remote uncompressed TFRecord object by its frame headers, reading it in windows of
 * 1 MiB (a window that ends inside a frame is followed by one from the next header; a rest of up
 * to 1.25 MiB is one window): about the object's size in bytes for small records, one window per
 * record for records over 1 MiB. Data
 * CRCs are checked when the records are read. Returns the compression of a GZIP/ZLIB object, which
 * has no offsets to index.
 *
 * @throws TFRecordError `BAD_COMPRESSION` when the object starts with neither a frame nor a
 * compressed stream, `TRUNCATED` when it ends inside a frame, `TOO_LARGE` for an impossible length.
 */
export async function walkTFRecordHeaders(
  source: ByteSource,
  object: ObjectStat,
  counter: RequestCounter,
): Promise<SidecarIndex | CompressedObject> {
  const size = object.size;
  const offsets: number[] = [];
  let firstHeader: Uint8Array | undefined;
  let position = 0;
  let window: Uint8Array = new Uint8Array(0);
  while (position < size) {
    counter.requests++;
    // A rest of up to 1.25 windows comes whole: an object of just over 1 MiB costs one GET, not two.
    const rest = size - position;
    window = await source.readRange(
      object,
      position,
      rest <= TFRECORD_WINDOW_BYTES * 1.25 ? rest : TFRECORD_WINDOW_BYTES,
    );
    if (position === 0) {
      const kind = detectCompression(window.subarray(0, FRAME_OVERHEAD));
      if (kind === undefined) {
        throw new TFRecordError(
          'BAD_COMPRESSION',
          'neither a TFRecord record header nor a gzip or zlib stream at the start of the file',
          { path: object.location, offset: 0 },
        );
      }
      if (kind !== 'none') return { compressed: kind };
      firstHeader = window.slice(0, BLOCK_HEADER_BYTES.tfrecord);
    }
    const view = new DataView(window.buffer, window.byteOffset, window.byteLength);
    let at = 0;
    while (at + BLOCK_HEADER_BYTES.tfrecord <= window.byteLength) {
      const frame = position + at;
      const high = view.getUint32(at + 4, true);
      const length = view.getUint32(at, true) + high * 2 ** 32;
      const where = { path: object.location, record: offsets.length, offset: frame };
      if (high >= 2 ** 20) throw new TFRecordError('TOO_LARGE', `a record length of ${length} bytes`, where);
      if (frame + FRAME_OVERHEAD + length > size) {
        throw new TFRecordError(
          'TRUNCATED',
          `file ends inside a record (${size - frame} of ${FRAME_OVERHEAD + length} bytes)`,
          where,
        );
      }
      offsets.push(frame);
      at += FRAME_OVERHEAD + length;
    }
    const next = position + at;
    if (next === position) {
      throw new TFRecordError('TRUNCATED', `file ends inside a record header (${size - position} bytes)`, {
        path: object.location,
        record: offsets.length,
        offset: position,
      });
    }
    position = next;
  }
  const numRecords = offsets.length;
  const perBlock = tfrecordRecordsPerBlock(size, numRecords);
  const blockOffsets = offsets.filter((_, record) => record % perBlock === 0);
  const lastOffset = blockOffsets[blockOffsets.length - 1];
  let lastHeader: Uint8Array = new Uint8Array(0);
  if (lastOffset !== undefined) {
    // The last window ends at the end of the object; it holds the last block's header when that
    // block starts inside it (always, for an object of one window).
    const inWindow = lastOffset - (size - window.byteLength);
    if (inWindow >= 0) {
      lastHeader = window.slice(inWindow, inWindow + BLOCK_HEADER_BYTES.tfrecord);
    } else {
      counter.requests++;
      lastHeader = await source.readRange(object, lastOffset, BLOCK_HEADER_BYTES.tfrecord);
    }
  }
  const check = sidecarCheck(firstHeader ?? new Uint8Array(0), lastHeader);
  return tfrecordSidecarIndex(blockOffsets, numRecords, perBlock, size, check);
}
