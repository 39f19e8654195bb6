import { crc32 } from 'node:zlib';
import type { ChunkInfo } from '../chunk-info.js';
import { COMPRESSORS, compressorName } from '../compressor.js';
import { RecordIOError } from '../errors.js';

/**
 * The sidecar index of a RecordIO or TFRecord data file (`<data file>.idx`): what a reader needs to
 * cut a task's record range into whole chunks (RecordIO) or blocks of frames (TFRecord) without a
 * header walk, in the spirit of DALI's `tfrecord2idx` and ArrayRecord's footer index. The format is
 * described in docs/recordio.md ("Sidecar index").
 */
export interface SidecarIndex {
  readonly format: 'recordio' | 'tfrecord';
  /** Size in bytes of the data file indexed. */
  readonly dataSize: number;
  readonly numRecords: number;
  /** TFRecord: records per block (the last block may hold fewer). RecordIO: 0, chunks are the blocks. */
  readonly recordsPerBlock: number;
  /** CRC-32 of the header bytes of the first and last block ({@link sidecarCheck}). */
  readonly check: number;
  /** Consecutive byte ranges of whole chunks or frames covering the file, in order. */
  readonly blocks: readonly IndexedBlock[];
  /** RecordIO: one entry per chunk, as `RecordIOReader.chunks` lists them. TFRecord: empty. */
  readonly chunks: readonly ChunkInfo[];
}

/** One block of a {@link SidecarIndex}: whole chunks or frames that are fetched and decoded together. */
export interface IndexedBlock {
  readonly index: number;
  /** Byte offset in the data file of the block's first header. */
  readonly offset: number;
  /** Bytes of the block, headers included. */
  readonly byteLength: number;
  readonly firstRecord: number;
  readonly numRecords: number;
}

/** `EDLINDEX`: the first 8 bytes of a sidecar index. */
const MAGIC = Uint8Array.from([0x45, 0x44, 0x4c, 0x49, 0x4e, 0x44, 0x45, 0x58]);
const VERSION = 1;
const FORMAT_IDS = { recordio: 1, tfrecord: 2 } as const;
/** magic 8, version 2, format 1, reserved 1, recordsPerBlock 4, dataSize 8, numRecords 8, blocks 4, check 4. */
const HEADER_BYTES = 40;
const TRAILER_BYTES = 4;
/** RecordIO entry: compressor, compressed size, records (uint32 each). TFRecord entry: uint64 offset. */
const ENTRY_BYTES = { recordio: 12, tfrecord: 8 } as const;
/** Bytes of a RecordIO chunk header and of a TFRecord frame header (length + its CRC). */
export const BLOCK_HEADER_BYTES = { recordio: 20, tfrecord: 12 } as const;
/** Stored bytes a TFRecord block aims at when its records-per-block is chosen. */
const TFRECORD_BLOCK_TARGET_BYTES = 64 * 1024;

/**
 * The check a sidecar index carries: CRC-32 of the header of the first block followed by the header
 * of the last (20-byte chunk headers, 12-byte frame headers; an empty file: CRC-32 of nothing). It
 * depends only on the data's bytes, never on how the object was uploaded (a multipart ETag depends
 * on the part size), and costs two header reads: the chunk headers carry each payload's CRC, so the
 * check changes with the first and last chunk's contents.
 */
export function sidecarCheck(firstHeader: Uint8Array, lastHeader: Uint8Array): number {
  return crc32(lastHeader, crc32(firstHeader));
}

/** The index of a RecordIO file from its chunk list (`RecordIOReader.chunks`, or a header walk). */
export function recordioSidecarIndex(
  chunks: readonly ChunkInfo[],
  dataSize: number,
  check: number,
): SidecarIndex {
  const blocks = chunks.map((chunk) => ({
    index: chunk.index,
    offset: chunk.offset,
    byteLength: BLOCK_HEADER_BYTES.recordio + chunk.compressedSize,
    firstRecord: chunk.firstRecord,
    numRecords: chunk.numRecords,
  }));
  const last = chunks[chunks.length - 1];
  return {
    format: 'recordio',
    dataSize,
    numRecords: last === undefined ? 0 : last.firstRecord + last.numRecords,
    recordsPerBlock: 0,
    check,
    blocks,
    chunks,
  };
}

/**
 * Records per block for a TFRecord index: blocks of about 64 KiB, so that the index stays at 8 bytes
 * per block and a task boundary inside a block costs at most one block of extra bytes.
 */
export function tfrecordRecordsPerBlock(dataSize: number, numRecords: number): number {
  if (numRecords === 0) return 1;
  const perRecord = dataSize / numRecords;
  return Math.max(1, Math.min(2 ** 24, Math.round(TFRECORD_BLOCK_TARGET_BYTES / perRecord)));
}

/**
 * The index of an uncompressed TFRecord file from the offsets of every `recordsPerBlock`-th record
 * (`blockOffsets[i]` = offset of record `i * recordsPerBlock`). Block `i` ends where block `i + 1`
 * starts, the last at `dataSize`.
 */
export function tfrecordSidecarIndex(
  blockOffsets: readonly number[],
  numRecords: number,
  recordsPerBlock: number,
  dataSize: number,
  check: number,
): SidecarIndex {
  const blocks = blockOffsets.map((offset, index) => {
    const firstRecord = index * recordsPerBlock;
    const end = blockOffsets[index + 1] ?? dataSize;
    return {
      index,
      offset,
      byteLength: end - offset,
      firstRecord,
      numRecords: Math.min(recordsPerBlock, numRecords - firstRecord),
    };
  });
  return { format: 'tfrecord', dataSize, numRecords, recordsPerBlock, check, blocks, chunks: [] };
}

/** The bytes of a sidecar index file. */
export function encodeSidecarIndex(index: SidecarIndex): Uint8Array {
  const entry = ENTRY_BYTES[index.format];
  const bytes = new Uint8Array(HEADER_BYTES + entry * index.blocks.length + TRAILER_BYTES);
  const view = new DataView(bytes.buffer);
  bytes.set(MAGIC, 0);
  view.setUint16(8, VERSION, true);
  view.setUint8(10, FORMAT_IDS[index.format]);
  view.setUint32(12, index.recordsPerBlock, true);
  view.setBigUint64(16, BigInt(index.dataSize), true);
  view.setBigUint64(24, BigInt(index.numRecords), true);
  view.setUint32(32, index.blocks.length, true);
  view.setUint32(36, index.check >>> 0, true);
  let at = HEADER_BYTES;
  if (index.format === 'recordio') {
    for (const chunk of index.chunks) {
      const compressor =
        typeof chunk.compressor === 'number' ? chunk.compressor : COMPRESSORS.indexOf(chunk.compressor);
      view.setUint32(at, compressor, true);
      view.setUint32(at + 4, chunk.compressedSize, true);
      view.setUint32(at + 8, chunk.numRecords, true);
      at += entry;
    }
  } else {
    for (const block of index.blocks) {
      view.setBigUint64(at, BigInt(block.offset), true);
      at += entry;
    }
  }
  view.setUint32(at, crc32(bytes.subarray(0, at)), true);
  return bytes;
}

/**
 * Parses and checks a sidecar index file: magic, version, format, lengths, its own CRC-32, and that
 * its blocks tile the data file exactly. It says nothing yet about whether the data file is the one
 * indexed: compare {@link SidecarIndex.dataSize} and {@link SidecarIndex.check} with the data.
 *
 * @param location - the index file's location, named in errors.
 * @throws RecordIOError `BAD_MAGIC` (not a sidecar index, another version or format, inconsistent
 * entries), `TRUNCATED` (a length that does not match), `CHECKSUM` (damaged).
 */
export function decodeSidecarIndex(
  bytes: Uint8Array,
  format: 'recordio' | 'tfrecord',
  location: string,
): SidecarIndex {
  const fail = (code: 'BAD_MAGIC' | 'TRUNCATED' | 'CHECKSUM', detail: string): never => {
    throw new RecordIOError(code, `not a usable sidecar index: ${detail}`, { path: location });
  };
  if (bytes.byteLength < HEADER_BYTES + TRAILER_BYTES) {
    fail('TRUNCATED', `${bytes.byteLength} bytes, fewer than a header`);
  }
  if (MAGIC.some((b, i) => bytes[i] !== b)) fail('BAD_MAGIC', 'no EDLINDEX magic');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const version = view.getUint16(8, true);
  if (version !== VERSION) fail('BAD_MAGIC', `version ${version}, this reader knows ${VERSION}`);
  const formatId = view.getUint8(10);
  if (formatId !== FORMAT_IDS[format]) fail('BAD_MAGIC', `format id ${formatId}, not ${format}`);
  const recordsPerBlock = view.getUint32(12, true);
  const dataSize = safeNumber(view.getBigUint64(16, true)) ?? fail('BAD_MAGIC', 'data size too large');
  const numRecords = safeNumber(view.getBigUint64(24, true)) ?? fail('BAD_MAGIC', 'record count too large');
  const numBlocks = view.getUint32(32, true);
  const check = view.getUint32(36, true);
  const end = HEADER_BYTES + ENTRY_BYTES[format] * numBlocks;
  if (bytes.byteLength !== end + TRAILER_BYTES) {
    fail('TRUNCATED', `${bytes.byteLength} bytes, but ${numBlocks} blocks need ${end + TRAILER_BYTES}`);
  }
  if (view.getUint32(end, true) !== crc32(bytes.subarray(0, end))) fail('CHECKSUM', 'CRC-32 mismatch');
  const index =
    format === 'recordio'
      ? decodeRecordIOEntries(view, numBlocks, dataSize, check)
      : decodeTFRecordEntries(view, numBlocks, numRecords, recordsPerBlock, dataSize, check);
  if (index === undefined) return fail('BAD_MAGIC', 'blocks that do not tile the data file');
  if (index.numRecords !== numRecords) fail('BAD_MAGIC', 'a record count its blocks do not add up to');
  return index;
}

function decodeRecordIOEntries(
  view: DataView,
  numBlocks: number,
  dataSize: number,
  check: number,
): SidecarIndex | undefined {
  const chunks: ChunkInfo[] = [];
  let offset = 0;
  let firstRecord = 0;
  for (let i = 0; i < numBlocks; i++) {
    const at = HEADER_BYTES + i * ENTRY_BYTES.recordio;
    const id = view.getUint32(at, true);
    const compressedSize = view.getUint32(at + 4, true);
    const numRecords = view.getUint32(at + 8, true);
    const compressor = compressorName(id);
    chunks.push(Object.freeze({ index: i, offset, compressor, compressedSize, numRecords, firstRecord }));
    offset += BLOCK_HEADER_BYTES.recordio + compressedSize;
    firstRecord += numRecords;
    if (offset > dataSize) return undefined;
  }
  if (offset !== dataSize) return undefined;
  return recordioSidecarIndex(Object.freeze(chunks), dataSize, check);
}

function decodeTFRecordEntries(
  view: DataView,
  numBlocks: number,
  numRecords: number,
  recordsPerBlock: number,
  dataSize: number,
  check: number,
): SidecarIndex | undefined {
  if (recordsPerBlock === 0 || numBlocks !== Math.ceil(numRecords / recordsPerBlock)) return undefined;
  const offsets: number[] = [];
  let previous = -1;
  for (let i = 0; i < numBlocks; i++) {
    const offset = safeNumber(view.getBigUint64(HEADER_BYTES + i * ENTRY_BYTES.tfrecord, true));
    // Every block holds at least one frame of 16 bytes or more.
    if (offset === undefined || offset <= previous || offset >= dataSize) return undefined;
    if (i === 0 && offset !== 0) return undefined;
    offsets.push(offset);
    previous = offset;
  }
  if (numBlocks === 0 && dataSize !== 0) return undefined;
  return tfrecordSidecarIndex(offsets, numRecords, recordsPerBlock, dataSize, check);
}

function safeNumber(value: bigint): number | undefined {
  return value <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(value) : undefined;
}
