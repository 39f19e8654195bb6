/**
 * A plain JavaScript RecordIO reader: the baseline the native reader is measured against. It is
 * written the way a careful Node.js programmer would: positioned reads into a reused buffer,
 * node:zlib for gzip and for the chunk CRC-32, a JS snappy decoder into a reused buffer, and records
 * parsed in place (no copies). To be generous to it, it does not check the per-frame CRC-32C of
 * snappy frames (the native reader does).
 */
import { closeSync, openSync, readSync } from 'node:fs';
import { crc32, gunzipSync } from 'node:zlib';

const HEADER = 20;
const MAGIC = 0x01020304;

/** Reads the chunk headers of `path` (one positioned read per chunk). */
export function jsIndex(fd) {
  const header = Buffer.alloc(HEADER);
  const chunks = [];
  let offset = 0;
  for (;;) {
    const n = readSync(fd, header, 0, HEADER, offset);
    if (n === 0) return chunks;
    if (n < HEADER || header.readUInt32LE(0) !== MAGIC) throw new Error(`bad chunk header at ${offset}`);
    const size = header.readUInt32LE(12);
    chunks.push({
      offset,
      crc: header.readUInt32LE(4),
      compressor: header.readUInt32LE(8),
      size,
      records: header.readUInt32LE(16),
    });
    offset += HEADER + size;
  }
}

/**
 * Scans every record of `path`, calling `visit(buf, begin, end)` for each (offsets into `buf`, valid
 * during the call). Returns the number of records.
 */
export function jsScan(path, visit) {
  const fd = openSync(path, 'r');
  try {
    let payload = Buffer.allocUnsafe(1 << 20);
    let snappyOut = Buffer.allocUnsafe(1 << 20);
    let total = 0;
    for (const chunk of jsIndex(fd)) {
      if (payload.length < chunk.size) payload = Buffer.allocUnsafe(chunk.size * 2);
      if (readSync(fd, payload, 0, chunk.size, chunk.offset + HEADER) !== chunk.size)
        throw new Error('short read');
      const stored = payload.subarray(0, chunk.size);
      if (crc32(stored) >>> 0 !== chunk.crc) throw new Error(`chunk CRC mismatch at ${chunk.offset}`);
      let raw;
      if (chunk.compressor === 0) raw = stored;
      else if (chunk.compressor === 2) raw = gunzipSync(stored);
      else if (chunk.compressor === 1) {
        const result = decodeSnappyFraming(stored, snappyOut);
        snappyOut = result.buffer;
        raw = snappyOut.subarray(0, result.length);
      } else throw new Error(`unknown compressor ${chunk.compressor}`);
      let at = 0;
      for (let i = 0; i < chunk.records; i++) {
        const len = raw[at] | (raw[at + 1] << 8) | (raw[at + 2] << 16) | (raw[at + 3] << 24);
        const begin = at + 4;
        at = begin + (len >>> 0);
        if (at > raw.length) throw new Error(`record past the payload in chunk at ${chunk.offset}`);
        visit(raw, begin, at);
      }
      total += chunk.records;
    }
    return total;
  } finally {
    closeSync(fd);
  }
}

/** Decodes a snappy framing stream into `out` (grown when needed). */
function decodeSnappyFraming(src, out) {
  let at = 0;
  let op = 0;
  while (at < src.length) {
    const type = src[at];
    const len = src[at + 1] | (src[at + 2] << 8) | (src[at + 3] << 16);
    const body = at + 4;
    at = body + len;
    if (type === 0x00 || type === 0x01) {
      if (out.length < op + 65536) {
        const bigger = Buffer.allocUnsafe(Math.max(out.length * 2, op + 65536));
        out.copy(bigger, 0, 0, op);
        out = bigger;
      }
      if (type === 0x01) {
        src.copy(out, op, body + 4, at);
        op += len - 4;
      } else {
        op = decodeSnappyBlock(src, body + 4, at, out, op);
      }
    } else if (type < 0x80) {
      if (type !== 0xff) throw new Error(`reserved snappy frame ${type}`);
    }
  }
  return { buffer: out, length: op };
}

function decodeSnappyBlock(src, pos, end, dst, op) {
  let length = 0;
  for (let shift = 0; ; shift += 7) {
    const b = src[pos++];
    length |= (b & 0x7f) << shift;
    if (b < 0x80) break;
  }
  const stop = op + length;
  while (pos < end) {
    const tag = src[pos++];
    const kind = tag & 3;
    if (kind === 0) {
      let len = tag >>> 2;
      if (len >= 60) {
        const extra = len - 59;
        len = src[pos];
        if (extra > 1) len |= src[pos + 1] << 8;
        if (extra > 2) len |= src[pos + 2] << 16;
        if (extra > 3) len |= src[pos + 3] << 24;
        pos += extra;
      }
      len += 1;
      if (len < 16) for (let i = 0; i < len; i++) dst[op++] = src[pos++];
      else {
        src.copy(dst, op, pos, pos + len);
        op += len;
        pos += len;
      }
      continue;
    }
    let len;
    let offset;
    if (kind === 1) {
      len = 4 + ((tag >>> 2) & 7);
      offset = ((tag >>> 5) << 8) | src[pos++];
    } else if (kind === 2) {
      len = 1 + (tag >>> 2);
      offset = src[pos] | (src[pos + 1] << 8);
      pos += 2;
    } else {
      len = 1 + (tag >>> 2);
      offset = src[pos] | (src[pos + 1] << 8) | (src[pos + 2] << 16) | (src[pos + 3] << 24);
      pos += 4;
    }
    if (offset === 0 || offset > op) throw new Error('bad snappy copy');
    if (offset >= len && len >= 16) {
      dst.copyWithin(op, op - offset, op - offset + len);
      op += len;
    } else {
      for (let i = 0; i < len; i++, op++) dst[op] = dst[op - offset];
    }
  }
  if (op !== stop) throw new Error('snappy block length mismatch');
  return op;
}
