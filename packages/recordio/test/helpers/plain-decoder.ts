import { crc32, gunzipSync } from 'node:zlib';
import { maskedCrc32c } from './crc32c.js';
import { decodeSnappyBlock } from './snappy-block.js';

/** A chunk as parsed by the plain-JS test decoder. */
export interface PlainChunk {
  readonly offset: number;
  readonly compressor: number;
  readonly compressedSize: number;
  readonly numRecords: number;
  /** Snappy only: how many data frames were compressed (0x00) and stored (0x01). */
  readonly frames?: { compressed: number; stored: number; maxUncompressed: number };
  readonly records: Uint8Array[];
}

const MAGIC = 0x01020304;

/**
 * Decodes a whole RecordIO file with plain JavaScript (node:zlib for gzip and CRC-32, a JS snappy
 * block decoder), checking every CRC. Independent of the addon: it is how tests check our writer.
 */
export function decodePlain(file: Uint8Array): PlainChunk[] {
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  const chunks: PlainChunk[] = [];
  let at = 0;
  while (at < file.length) {
    if (at + 20 > file.length) throw new Error(`truncated header at ${at}`);
    const magic = view.getUint32(at, true);
    if (magic !== MAGIC) throw new Error(`bad magic at ${at}`);
    const crc = view.getUint32(at + 4, true);
    const compressor = view.getUint32(at + 8, true);
    const compressedSize = view.getUint32(at + 12, true);
    const numRecords = view.getUint32(at + 16, true);
    const payload = file.subarray(at + 20, at + 20 + compressedSize);
    if (payload.length !== compressedSize) throw new Error(`truncated payload at ${at}`);
    if (crc32(payload) >>> 0 !== crc) throw new Error(`chunk CRC mismatch at ${at}`);
    let raw: Uint8Array;
    let frames: PlainChunk['frames'];
    if (compressor === 0) raw = payload;
    else if (compressor === 2) raw = gunzipSync(payload);
    else if (compressor === 1) ({ raw, frames } = decodeSnappyFraming(payload));
    else throw new Error(`unknown compressor ${compressor}`);
    const records = splitRecords(raw, numRecords);
    chunks.push({
      offset: at,
      compressor,
      compressedSize,
      numRecords,
      records,
      ...(frames ? { frames } : {}),
    });
    at += 20 + compressedSize;
  }
  return chunks;
}

/** All records of a file, in order. */
export function decodePlainRecords(file: Uint8Array): Uint8Array[] {
  return decodePlain(file).flatMap((c) => c.records);
}

function splitRecords(raw: Uint8Array, numRecords: number): Uint8Array[] {
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  const records: Uint8Array[] = [];
  let at = 0;
  for (let i = 0; i < numRecords; i++) {
    if (at + 4 > raw.length) throw new Error(`record ${i}: length prefix past the payload`);
    const len = view.getUint32(at, true);
    at += 4;
    if (at + len > raw.length) throw new Error(`record ${i}: bytes past the payload`);
    records.push(raw.subarray(at, at + len));
    at += len;
  }
  if (at !== raw.length) throw new Error(`${raw.length - at} bytes after the last record`);
  return records;
}

/** Decodes a snappy framing stream (github.com/google/snappy framing_format.txt). */
export function decodeSnappyFraming(stream: Uint8Array): {
  raw: Uint8Array;
  frames: { compressed: number; stored: number; maxUncompressed: number };
} {
  const parts: Uint8Array[] = [];
  const frames = { compressed: 0, stored: 0, maxUncompressed: 0 };
  let at = 0;
  let sawIdentifier = false;
  while (at < stream.length) {
    if (at + 4 > stream.length) throw new Error('snappy framing: truncated frame header');
    const type = stream[at] as number;
    const len =
      (stream[at + 1] as number) | ((stream[at + 2] as number) << 8) | ((stream[at + 3] as number) << 16);
    const body = stream.subarray(at + 4, at + 4 + len);
    if (body.length !== len) throw new Error('snappy framing: truncated frame');
    at += 4 + len;
    if (type === 0xff) {
      if (Buffer.from(body).toString('latin1') !== 'sNaPpY')
        throw new Error('snappy framing: bad stream identifier');
      sawIdentifier = true;
      continue;
    }
    if (!sawIdentifier) throw new Error('snappy framing: data before the stream identifier');
    if (type === 0x00 || type === 0x01) {
      const expected = new DataView(body.buffer, body.byteOffset, 4).getUint32(0, true);
      const data = type === 0x00 ? decodeSnappyBlock(body.subarray(4)) : body.subarray(4);
      if (maskedCrc32c(data) !== expected) throw new Error('snappy framing: frame CRC mismatch');
      if (data.length > 65536) throw new Error(`snappy framing: frame of ${data.length} bytes > 64 KiB`);
      frames.maxUncompressed = Math.max(frames.maxUncompressed, data.length);
      if (type === 0x00) frames.compressed++;
      else frames.stored++;
      parts.push(data);
    } else if (type >= 0x80) {
      // 0x80-0xfd reserved skippable, 0xfe padding.
    } else {
      throw new Error(`snappy framing: reserved unskippable frame type ${type}`);
    }
  }
  return { raw: Buffer.concat(parts), frames };
}
