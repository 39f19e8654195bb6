import { type CompressorName, compressorName } from './compressor.js';

/** What the index scan learned about one chunk from its header. */
export interface ChunkInfo {
  /** Position of the chunk in the file (0-based). */
  readonly index: number;
  /** Byte offset of the chunk header in the file. */
  readonly offset: number;
  /** Compressor named in the header; a number when the id is unknown (reading it fails). */
  readonly compressor: CompressorName | number;
  /** Stored payload size in bytes (after compression, header not included). */
  readonly compressedSize: number;
  /** Records in the chunk. */
  readonly numRecords: number;
  /** Index in the file of the chunk's first record. */
  readonly firstRecord: number;
}

/** Number of values per chunk in the addon's chunk table. */
const FIELDS = 5;

/** Turns the addon's flat chunk table (5 numbers per chunk) into frozen ChunkInfo objects. */
export function chunkInfosFromTable(table: Float64Array): readonly ChunkInfo[] {
  const chunks: ChunkInfo[] = [];
  for (let i = 0; i * FIELDS < table.length; i++) {
    const at = i * FIELDS;
    chunks.push(
      Object.freeze({
        index: i,
        offset: table[at] as number,
        compressor: compressorName(table[at + 1] as number),
        compressedSize: table[at + 2] as number,
        numRecords: table[at + 3] as number,
        firstRecord: table[at + 4] as number,
      }),
    );
  }
  return Object.freeze(chunks);
}

/** Index of the chunk holding record `record` (binary search on firstRecord); -1 if none. */
export function chunkIndexOf(chunks: readonly ChunkInfo[], record: number): number {
  let lo = 0;
  let hi = chunks.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    const chunk = chunks[mid] as ChunkInfo;
    if (chunk.firstRecord <= record) {
      found = mid;
      lo = mid + 1;
    } else {
      hi = mid - 1;
    }
  }
  // Skip back over trailing chunks without records so the answer holds the record.
  while (found >= 0) {
    const chunk = chunks[found] as ChunkInfo;
    if (record < chunk.firstRecord + chunk.numRecords) return found;
    if (chunk.numRecords > 0) return -1;
    found--;
  }
  return -1;
}

/**
 * Splits records `[start, start + count)` into chunk-aligned ranges of about `targetBytes` stored
 * bytes each (at least one chunk), so every read decodes whole chunks only once.
 */
export function planChunkAlignedRanges(
  chunks: readonly ChunkInfo[],
  start: number,
  count: number,
  targetBytes: number,
): Array<readonly [start: number, count: number]> {
  const ranges: Array<readonly [number, number]> = [];
  const end = start + count;
  if (count <= 0) return ranges;
  let index = chunkIndexOf(chunks, start);
  let rangeStart = start;
  let bytes = 0;
  while (index >= 0 && index < chunks.length) {
    const chunk = chunks[index] as ChunkInfo;
    const chunkEnd = chunk.firstRecord + chunk.numRecords;
    bytes += chunk.compressedSize;
    if (chunkEnd >= end) {
      ranges.push([rangeStart, end - rangeStart]);
      return ranges;
    }
    if (bytes >= targetBytes) {
      if (chunkEnd > rangeStart) ranges.push([rangeStart, chunkEnd - rangeStart]);
      rangeStart = chunkEnd;
      bytes = 0;
    }
    index++;
  }
  if (end > rangeStart) ranges.push([rangeStart, end - rangeStart]);
  return ranges;
}
