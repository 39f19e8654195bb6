/**
 * The TypeScript shape of the native addon `edl_native.node`. It mirrors docs/native-binding.md
 * exactly: when the contract changes, this file changes with it. Nothing outside @edl/recordio sees
 * these types; the public API wraps them.
 *
 * @packageDocumentation
 */

import type { NativePrefetchAddon } from './prefetch-types.js';

/** Numeric compressor ids as stored in a chunk header: 0 none, 1 snappy, 2 gzip. */
export type NativeCompressorId = 0 | 1 | 2;

/** The module object exported by `edl_native.node`. */
export interface NativeAddon extends NativePrefetchAddon {
  /** N-API version the addon targets (8); must not exceed `process.versions.napi`. */
  readonly napiVersion: number;
  /** Addon version, the same as the package version. */
  readonly version: string;
  /** Which CRC implementations the addon picked at load time, e.g. `pclmul` or `table`. */
  readonly features: { readonly crc32: string; readonly crc32c: string };
  /** Opens `path` and scans its chunk headers (one positioned read per chunk). Throws on error. */
  openReader(path: string): NativeReader;
  /** Creates (truncates) `path`. */
  createWriter(
    path: string,
    compressor: NativeCompressorId,
    maxChunkBytes: number,
    gzipLevel: number,
  ): NativeWriter;
  /** Scans the record headers of an uncompressed TFRecord file (libuv thread pool). */
  tfrecordScan(path: string): Promise<NativeTFRecordScan>;
  /**
   * Checks and locates the whole TFRecord frames at the start of `buf` (stream offset `base`):
   * writes data `[begin, end)` offsets into `bounds` (at most `min(maxRecords, bounds.length / 2)`).
   */
  tfrecordDecode(
    buf: Uint8Array,
    base: number,
    maxRecords: number,
    bounds: Uint32Array,
    verifyData: boolean,
    maxRecordSize: number,
  ): NativeTFRecordDecode;
  /** Frames the records `[begin, end)` of `data` given by `bounds`. */
  tfrecordEncode(data: Uint8Array, bounds: Uint32Array): Uint8Array;
  /** What the first bytes of a stream look like. */
  tfrecordDetect(head: Uint8Array): 'none' | 'gzip' | 'zlib' | 'unknown';
  /**
   * Decodes RecordIO chunks held in memory (`bytes` starts at a chunk header) on the libuv pool:
   * the index scan and chunk reads of a file, over the buffer. `chunkTable` (5 numbers per chunk,
   * as {@link NativeReader.chunkTable}) lists the chunks the buffer must hold, or null. Faults name
   * no path. `bytes` and the reused buffers are left untouched until the promise settles.
   */
  recordioDecodeRange(
    bytes: Uint8Array,
    spec: NativeRangeSpec,
    chunkTable: Float64Array | null,
    reuseData?: ArrayBuffer,
    reuseBounds?: ArrayBuffer,
  ): Promise<NativeReadResult>;
  /** Same as {@link NativeAddon.recordioDecodeRange}, on the calling thread. */
  recordioDecodeRangeSync(
    bytes: Uint8Array,
    spec: NativeRangeSpec,
    chunkTable: Float64Array | null,
    reuseData?: ArrayBuffer,
    reuseBounds?: ArrayBuffer,
  ): NativeReadResult;
  /**
   * Checks and locates the TFRecord frames of `bytes` (starting at a frame, at file offset
   * `baseOffset`) on the libuv pool: the first `count` records, or every frame (-1). Records stay
   * in `bytes`: `bounds` index it. Rejects only for 4 GiB or more of bytes.
   */
  tfrecordDecodeRange(
    bytes: Uint8Array,
    baseOffset: number,
    count: number,
    maxRecordSize: number,
  ): Promise<NativeTFRecordRange>;
  /** Same as {@link NativeAddon.tfrecordDecodeRange}, on the calling thread. */
  tfrecordDecodeRangeSync(
    bytes: Uint8Array,
    baseOffset: number,
    count: number,
    maxRecordSize: number,
  ): NativeTFRecordRange;
}

/** What {@link NativeAddon.recordioDecodeRange} decodes, and where the bytes lie in their file. */
export interface NativeRangeSpec {
  /** File offset of `bytes[0]`. */
  readonly baseOffset: number;
  /** Index in the file of the buffer's first chunk. */
  readonly firstChunk: number;
  /** Index in the file of that chunk's first record. */
  readonly firstRecord: number;
  /** Records of the buffer passed over before the first one delivered. */
  readonly skip: number;
  /** Records to deliver, or -1 for every one after `skip`. */
  readonly count: number;
  readonly skipCorrupt: boolean;
  /** Decoded bytes beyond which the read stops with `TOO_LARGE` (at most 4 GiB - 1). */
  readonly maxDecodedBytes: number;
}

/** Result of {@link NativeAddon.tfrecordDecodeRange}. */
export interface NativeTFRecordRange {
  /** `[begin, end)` of each record's data, as offsets into the input bytes. */
  readonly bounds: Uint32Array;
  /** What stopped the decode (`offset` absolute); the records before it are in `bounds`. */
  readonly fault: NativeFault | null;
}

/** Result of {@link NativeAddon.tfrecordScan}. */
export interface NativeTFRecordScan {
  /** Byte offset of every record found, plus the end of the last one. */
  readonly offsets: Float64Array;
  readonly fileSize: number;
  /** What stopped the scan before the end of the file (records before it are in `offsets`). */
  readonly fault?: NativeFault;
}

/** Result of {@link NativeAddon.tfrecordDecode}. */
export interface NativeTFRecordDecode {
  readonly records: number;
  /** Bytes of `buf` the records span; the next frame or the fault starts there. */
  readonly consumed: number;
  /** `buf` ends inside a frame. */
  readonly needMore: boolean;
  /** A bad frame at `consumed`; `offset` is absolute (base added). */
  readonly fault?: NativeFault;
}

/** A file opened for reading, with its chunk index already scanned. */
export interface NativeReader {
  readonly path: string;
  readonly numRecords: number;
  readonly numChunks: number;
  readonly fileSize: number;
  /** 5 numbers per chunk: offset, compressor, compressedSize, numRecords, firstRecord. */
  chunkTable(): Float64Array;
  /**
   * Reads records `[start, start + count)` on the libuv thread pool. The range is checked by the
   * caller. Never rejects for a bad chunk: faults come back in the result. `reuseData` /
   * `reuseBounds`: ArrayBuffers of earlier results handed back to be decoded into (the result's
   * views are then in them when the read fits); the caller leaves them untouched until it settles.
   */
  read(
    start: number,
    count: number,
    skipCorrupt: boolean,
    reuseData?: ArrayBuffer,
    reuseBounds?: ArrayBuffer,
  ): Promise<NativeReadResult>;
  /** Same as {@link NativeReader.read}, on the calling thread. */
  readSync(
    start: number,
    count: number,
    skipCorrupt: boolean,
    reuseData?: ArrayBuffer,
    reuseBounds?: ArrayBuffer,
  ): NativeReadResult;
  /** Idempotent; a pending read finishes first. */
  close(): void;
}

/** Records decoded by one read: one buffer plus `[begin, end)` pairs into it. */
export interface NativeReadResult {
  /**
   * The decoded bytes of the chunks touched, at offset 0 of an ArrayBuffer that may be longer
   * (the whole native block, so it can be handed back for reuse).
   */
  readonly data: Uint8Array;
  /** 2 per delivered record: begin, end (byte offsets into `data`). */
  readonly bounds: Uint32Array;
  /**
   * Index of the first delivered record: the start of the read for file reads; past the chunks
   * skipped at its start for decodes from memory.
   */
  readonly firstRecord: number;
  /** With `skipCorrupt`: each bad chunk passed over. */
  readonly skipped: NativeFault[];
  /** Without `skipCorrupt`: the fault that stopped the read. Records before it are delivered. */
  readonly error: NativeFault | null;
}

/** A problem with one chunk, as the addon reports it. */
export interface NativeFault {
  readonly code: string;
  readonly message: string;
  readonly path: string;
  /** Chunk index, -1 when none. */
  readonly chunk: number;
  /** Byte offset in the file, -1 when none. */
  readonly offset: number;
  /** Records of that chunk that were not delivered. */
  readonly records: number;
}

/** A file opened for writing. */
export interface NativeWriter {
  /** Appends one record (copied). May compress and write a full chunk synchronously. */
  write(record: Uint8Array): void;
  /** Appends many records in one call: `bounds` holds `[begin, end)` pairs into `data`. */
  writeBatch(data: Uint8Array, bounds: Uint32Array): void;
  readonly recordsWritten: number;
  readonly chunksWritten: number;
  readonly bytesWritten: number;
  /** Flushes the last chunk; idempotent; throws on I/O failure. */
  close(): void;
}

/** Shape of an `Error` thrown by the addon itself (openReader, createWriter, write, close). */
export interface NativeError extends Error {
  readonly code: string;
  readonly path?: string;
  readonly chunk?: number;
  readonly offset?: number;
}
