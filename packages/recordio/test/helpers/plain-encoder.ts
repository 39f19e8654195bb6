import { crc32, gzipSync } from 'node:zlib';
import { maskedCrc32c } from './crc32c.js';

/**
 * An independent RecordIO writer for tests, in plain JavaScript: it produces what other writers may
 * produce and ours never does (stored and compressed snappy frames mixed, padding and skippable
 * frames, small frames, gzip at every level, several gzip members), so the native reader is checked
 * against more than its own writer and the Go files.
 */

/** How the snappy framing stream of a chunk is laid out. */
export interface SnappyLayout {
  /** Uncompressed bytes per frame (1..65536). */
  readonly frameBytes: number;
  /** Frame i is stored (type 0x01) when this says so, else compressed (0x00). */
  readonly stored: (frame: number) => boolean;
  /** Insert a padding frame (0xfe) and a reserved skippable frame (0x80) before frame i. */
  readonly padBefore?: (frame: number) => boolean;
}

/** Options of {@link encodeChunk}. */
export type ChunkEncoding =
  | { readonly compressor: 'none' }
  | { readonly compressor: 'gzip'; readonly level: number; readonly members?: number }
  | { readonly compressor: 'snappy'; readonly layout: SnappyLayout };

/** The decompressed payload: each record as u32le(length) + bytes. */
export function framedRecords(records: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = [];
  for (const r of records) {
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(r.length);
    parts.push(prefix, Buffer.from(r));
  }
  return Buffer.concat(parts);
}

/** One chunk: header (magic, CRC-32 of the payload, compressor, size, records) and payload. */
export function encodeChunk(records: readonly Uint8Array[], encoding: ChunkEncoding): Buffer {
  const raw = framedRecords(records);
  let payload: Buffer;
  let id: number;
  if (encoding.compressor === 'none') {
    payload = raw;
    id = 0;
  } else if (encoding.compressor === 'gzip') {
    const members = Math.max(1, encoding.members ?? 1);
    const step = Math.ceil(raw.length / members) || 1;
    const parts: Buffer[] = [];
    for (let at = 0; at < raw.length || parts.length === 0; at += step) {
      parts.push(gzipSync(raw.subarray(at, at + step), { level: encoding.level }));
    }
    payload = Buffer.concat(parts);
    id = 2;
  } else {
    payload = snappyFraming(raw, encoding.layout);
    id = 1;
  }
  const header = Buffer.alloc(20);
  header.writeUInt32LE(0x01020304, 0);
  header.writeUInt32LE(crc32(payload) >>> 0, 4);
  header.writeUInt32LE(id, 8);
  header.writeUInt32LE(payload.length, 12);
  header.writeUInt32LE(records.length, 16);
  return Buffer.concat([header, payload]);
}

function frame(type: number, body: Buffer): Buffer {
  const head = Buffer.alloc(4);
  head[0] = type;
  head.writeUIntLE(body.length, 1, 3);
  return Buffer.concat([head, body]);
}

function snappyFraming(raw: Buffer, layout: SnappyLayout): Buffer {
  const parts = [frame(0xff, Buffer.from('sNaPpY', 'latin1'))];
  for (let at = 0, i = 0; at < raw.length; at += layout.frameBytes, i++) {
    const data = raw.subarray(at, at + layout.frameBytes);
    if (layout.padBefore?.(i)) {
      parts.push(frame(0xfe, Buffer.alloc(i % 7)), frame(0x80, Buffer.from('skip me')));
    }
    const crc = Buffer.alloc(4);
    crc.writeUInt32LE(maskedCrc32c(data));
    parts.push(
      layout.stored(i)
        ? frame(0x01, Buffer.concat([crc, data]))
        : frame(0x00, Buffer.concat([crc, compressSnappyBlock(data)])),
    );
  }
  return Buffer.concat(parts);
}

/**
 * A small greedy snappy block compressor: literals, and copies with 1-, 2- and 4-byte offsets
 * (each element type the format has), found through a hash of 4-byte sequences.
 */
export function compressSnappyBlock(input: Uint8Array): Buffer {
  const out: number[] = [];
  let n = input.length;
  do {
    out.push((n & 0x7f) | (n > 0x7f ? 0x80 : 0));
    n >>>= 7;
  } while (n > 0);
  const table = new Map<number, number>();
  let literalStart = 0;
  let i = 0;
  const emitLiteral = (end: number) => {
    let start = literalStart;
    while (start < end) {
      const len = Math.min(end - start, 1 << 16);
      const l = len - 1;
      if (l < 60) out.push(l << 2);
      else if (l < 256) out.push(60 << 2, l);
      else out.push(61 << 2, l & 0xff, l >>> 8);
      for (let k = 0; k < len; k++) out.push(input[start + k] as number);
      start += len;
    }
  };
  const emitCopy = (offset: number, len: number, element: number) => {
    while (len > 0) {
      const chunk = Math.min(len, 64);
      if (element === 1 && chunk >= 4 && chunk <= 11 && offset < 2048) {
        out.push(1 | ((chunk - 4) << 2) | ((offset >>> 8) << 5), offset & 0xff);
      } else if (element === 4) {
        out.push(
          3 | ((chunk - 1) << 2),
          offset & 0xff,
          (offset >>> 8) & 0xff,
          (offset >>> 16) & 0xff,
          offset >>> 24,
        );
      } else {
        out.push(2 | ((chunk - 1) << 2), offset & 0xff, offset >>> 8);
      }
      len -= chunk;
    }
  };
  while (i + 4 <= input.length) {
    const key =
      (input[i] as number) |
      ((input[i + 1] as number) << 8) |
      ((input[i + 2] as number) << 16) |
      ((input[i + 3] as number) << 24);
    const candidate = table.get(key);
    table.set(key, i);
    if (candidate !== undefined && i - candidate < 65536) {
      let len = 4;
      while (i + len < input.length && input[candidate + len] === input[i + len]) len++;
      emitLiteral(i);
      const offset = i - candidate;
      // Rotate through the copy element types so all of them are exercised.
      const element = offset < 2048 && len <= 11 ? 1 : i % 3 === 0 ? 4 : 2;
      emitCopy(offset, len, element);
      i += len;
      literalStart = i;
    } else {
      i++;
    }
  }
  literalStart = Math.min(literalStart, input.length);
  emitLiteral(input.length);
  return Buffer.from(out);
}
