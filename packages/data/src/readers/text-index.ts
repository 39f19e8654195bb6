import { open } from 'node:fs/promises';
import { DataReaderError } from './errors.js';
import { RecordBoundaryScanner, type TextFormat } from './record-boundary-scanner.js';

/** A text file opened for reading: a local file handle has this shape, and so has a remote object's. */
export interface TextHandle {
  /** Reads up to `length` bytes at `position` into `buffer` at `offset`; 0 bytes at the end. */
  read(buffer: Buffer, offset: number, length: number, position: number): Promise<{ bytesRead: number }>;
  /** The size and modification time now (a remote object's are those of the version it is pinned to). */
  stat(): Promise<{ readonly size: number; readonly mtimeMs: number }>;
  close(): Promise<void>;
}

/** Where a text file's bytes come from: a local file, or a remote object read by ranged GETs. */
export interface TextFile {
  /**
   * Opens the file for reads that start at `from` and mostly end by `to` (a hint: a remote object
   * fetches `[from, to)` and no further unless asked; a local file ignores it).
   */
  open(from: number, to: number): Promise<TextHandle>;
}

/** A local text file, opened with `fs.open` for every read. */
export function localTextFile(path: string): TextFile {
  return {
    open: async () => {
      try {
        return await open(path, 'r');
      } catch (error) {
        throw new DataReaderError('IO', `cannot open ${path}: ${(error as Error).message}`, error);
      }
    },
  };
}

/** How to cut a text file into records. */
export interface TextLayout {
  /** The file's path or URL, as shard names and errors name it. */
  readonly path: string;
  readonly file: TextFile;
  readonly format: TextFormat;
  /** The field delimiter as a byte (csv only). */
  readonly delimiter: number;
  /** Whether the first record is a header rather than data. */
  readonly header: boolean;
}

/**
 * Where the records of a text file start, built once by streaming the file. Only every `stride`-th
 * record's byte offset is kept (in a Float64Array, exact for any file size below 2^53 bytes): a read
 * seeks to the block of its first record and re-scans at most `stride - 1` records, which costs a
 * few kilobytes per task, while the index costs 8 / stride bytes per record (31 MB for a billion
 * records at the default stride of 256, against 8 GB for all offsets).
 */
export interface TextIndex {
  /** Data records in the file (the header excluded). */
  readonly recordCount: number;
  readonly stride: number;
  /** Byte offset of data record `k * stride`, for each block k. */
  readonly blockOffsets: Float64Array;
  /** File size and modification time when indexed: a read refuses a changed file. */
  readonly size: number;
  readonly mtimeMs: number;
}

const INDEX_CHUNK_BYTES = 1 << 20;
const READ_CHUNK_BYTES = 1 << 16;
/** Bytes a remote object is asked for when its first records are read (more follow when they are longer). */
const LEADING_BYTES = 1 << 16;

/** Byte offset of the first record: after a UTF-8 byte order mark, if any. */
export async function firstRecordOffset(handle: TextHandle): Promise<number> {
  const bom = Buffer.alloc(3);
  const { bytesRead } = await handle.read(bom, 0, 3, 0);
  return bytesRead === 3 && bom[0] === 0xef && bom[1] === 0xbb && bom[2] === 0xbf ? 3 : 0;
}

/**
 * Scans the whole file once, in 1 MiB pieces, and returns its sparse record index.
 * `onProgress(scannedBytes, totalBytes)` is called after each piece.
 */
export async function buildTextIndex(
  layout: TextLayout,
  stride: number,
  onProgress?: (scannedBytes: number, totalBytes: number) => void,
): Promise<TextIndex> {
  const handle = await layout.file.open(0, Number.POSITIVE_INFINITY);
  try {
    const stat = await handle.stat();
    let offsets = new Float64Array(1024);
    let recordCount = 0;
    let headerPending = layout.header;
    const sink = (start: number): void => {
      if (headerPending) {
        headerPending = false;
        return;
      }
      if (recordCount % stride === 0) {
        const block = recordCount / stride;
        if (block === offsets.length) {
          const grown = new Float64Array(offsets.length * 2);
          grown.set(offsets);
          offsets = grown;
        }
        offsets[block] = start;
      }
      recordCount += 1;
    };
    let position = await firstRecordOffset(handle);
    const scanner = new RecordBoundaryScanner(layout.format, layout.delimiter, sink, layout.path, position);
    const buffer = Buffer.allocUnsafe(INDEX_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
      if (bytesRead === 0) break;
      scanner.scan(buffer.subarray(0, bytesRead), position);
      position += bytesRead;
      onProgress?.(position, stat.size);
    }
    scanner.finish(position);
    const blocks = Math.ceil(recordCount / stride);
    return {
      recordCount,
      stride,
      blockOffsets: offsets.slice(0, blocks),
      size: stat.size,
      mtimeMs: stat.mtimeMs,
    };
  } finally {
    await handle.close();
  }
}

/** Reads the header record, or returns undefined for a file without records. */
export async function readHeaderText(layout: TextLayout): Promise<string | undefined> {
  return (await readLeadingTexts(layout, 1))[0];
}

/** The raw text of the first `count` records of the file (fewer when it has fewer), header included. */
export async function readLeadingTexts(layout: TextLayout, count: number): Promise<string[]> {
  const handle = await layout.file.open(0, LEADING_BYTES);
  try {
    const from = await firstRecordOffset(handle);
    const out: string[] = [];
    for await (const texts of readRecordTexts(handle, layout, from, 0, count, Number.POSITIVE_INFINITY)) {
      out.push(...texts);
      if (out.length >= count) break;
    }
    return out.slice(0, count);
  } finally {
    await handle.close();
  }
}

/**
 * Yields the raw text of `count` records, skipping `skip` records first, starting at byte `from`
 * (a record start), in batches (one per piece read: one await per batch, not per record). Reads
 * 64 KiB pieces and keeps only the record in progress between them.
 * `fileSize` is the size the index saw: a file that ends sooner has changed.
 */
export async function* readRecordTexts(
  handle: TextHandle,
  layout: TextLayout,
  from: number,
  skip: number,
  count: number,
  fileSize: number,
): AsyncGenerator<string[]> {
  const found: number[] = [];
  const scanner = new RecordBoundaryScanner(
    layout.format,
    layout.delimiter,
    (start, end) => found.push(start, end),
    layout.path,
    from,
  );
  let window: Buffer = Buffer.alloc(0);
  let windowBase = from;
  let position = from;
  let toSkip = skip;
  let remaining = count;
  let ended = false;
  while (remaining > 0 && !ended) {
    const chunk = Buffer.allocUnsafe(READ_CHUNK_BYTES);
    const { bytesRead } = await handle.read(chunk, 0, chunk.length, position);
    if (bytesRead === 0) {
      scanner.finish(position);
      ended = true;
    } else {
      const piece = chunk.subarray(0, bytesRead);
      scanner.scan(piece, position);
      window = window.length === 0 ? piece : Buffer.concat([window, piece]);
      position += bytesRead;
    }
    const texts: string[] = [];
    for (let i = 0; i < found.length && remaining > 0; i += 2) {
      if (toSkip > 0) {
        toSkip -= 1;
        continue;
      }
      texts.push(window.toString('utf8', found[i]! - windowBase, found[i + 1]! - windowBase));
      remaining -= 1;
    }
    found.length = 0;
    if (texts.length > 0) yield texts;
    const keepFrom = scanner.pendingStart - windowBase;
    window = keepFrom >= window.length ? Buffer.alloc(0) : window.subarray(keepFrom);
    windowBase = scanner.pendingStart;
  }
  if (remaining > 0 && Number.isFinite(fileSize)) {
    throw new DataReaderError(
      'FILE_CHANGED',
      `${layout.path} ended at byte ${position} with ${remaining} records still to read; it changed after it was indexed (${fileSize} bytes)`,
    );
  }
}
