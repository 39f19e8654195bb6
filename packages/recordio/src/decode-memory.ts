import {
  checkFunction,
  checkInteger,
  checkOneOf,
  checkOptionalInteger,
  checkOptions,
  invalidArgument,
} from '@edl/common';
import type { ChunkInfo } from './chunk-info.js';
import { COMPRESSORS, type CompressorName } from './compressor.js';
import {
  type CallSite,
  captureCallSite,
  fromThrown,
  RecordIOError,
  type RecordIOErrorCode,
  withCallSite,
} from './errors.js';
import type {
  NativeFault,
  NativeRangeSpec,
  NativeReadResult,
  NativeTFRecordRange,
} from './native/addon-types.js';
import { getAddon } from './native/load-addon.js';
import { type BatchRecycler, RecordBatch } from './record-batch.js';
import { TFRecordError } from './tfrecord/tfrecord-error.js';

/** Options of {@link decodeRecordIORange}. */
export interface RecordIORangeOptions {
  /** Where the bytes came from (a path or URL), named in errors. */
  readonly source?: string;
  /**
   * Byte offset of `bytes[0]` in its file, for error offsets. Default: the offset of the first
   * chunk given, else 0. With chunks, it must be that offset.
   */
  readonly baseOffset?: number;
  /** Index in the file of the buffer's first chunk. Default: that of the first chunk given, else 0. */
  readonly firstChunk?: number;
  /** Index in the file of the buffer's first record. Default: that of the first chunk given, else 0. */
  readonly firstRecord?: number;
  /** Records of the buffer passed over before the first one delivered (default 0). */
  readonly skip?: number;
  /** Records to deliver (default: all after `skip`). More than the range holds is `OUT_OF_RANGE`. */
  readonly count?: number;
  /**
   * What to do with a chunk that fails to decode, as the reader's option of that name does:
   * `'error'` (default) throws its RecordIOError; `'skip'` passes it over and reports it to `onSkip`.
   */
  readonly onCorruptChunk?: 'error' | 'skip';
  /** Called once per chunk passed over in skip mode, before the promise settles. */
  readonly onSkip?: (fault: RecordIOError) => void;
  /**
   * Decoded bytes (record bytes plus their 4-byte length prefixes) beyond which the decode stops
   * with `TOO_LARGE`, so that a hostile or mistaken range cannot exhaust memory. Default 1 GiB, at
   * most 4 GiB - 1.
   */
  readonly maxDecodedBytes?: number;
  /**
   * Buffers of released batches to decode into instead of fresh memory (each used while the
   * result fits in it): what a long read hands back through `recycle`. Left untouched by
   * JavaScript until the promise settles.
   */
  readonly reuse?: { readonly data?: ArrayBuffer; readonly bounds?: ArrayBuffer };
  /** Where the result's {@link RecordBatch.release} hands its buffers back, for a later `reuse`. */
  readonly recycle?: BatchRecycler;
}

/** Options of {@link decodeTFRecordRange}. */
export interface TFRecordRangeOptions {
  /** Where the bytes came from (a path or URL), named in errors. */
  readonly source?: string;
  /** Byte offset of `bytes[0]` in its file, for error offsets (default 0). */
  readonly baseOffset?: number;
  /** Index in the file of the first record of `bytes` (default 0). */
  readonly firstRecord?: number;
  /**
   * Records the range holds. Default: every frame in `bytes`, which must then end at a frame
   * boundary. Fewer whole frames than `count` is `TRUNCATED`; bytes after them are ignored.
   */
  readonly count?: number;
  /** Longest record accepted, in bytes (default and most: 4 GiB - 17); longer is `TOO_LARGE`. */
  readonly maxRecordSize?: number;
}

const RECORDIO_KEYS = [
  'source',
  'baseOffset',
  'firstChunk',
  'firstRecord',
  'skip',
  'count',
  'onCorruptChunk',
  'onSkip',
  'maxDecodedBytes',
  'reuse',
  'recycle',
] as const;
const TFRECORD_KEYS = ['source', 'baseOffset', 'firstRecord', 'count', 'maxRecordSize'] as const;
const MAX_DECODED_BYTES = 2 ** 32 - 1;
const DEFAULT_MAX_DECODED_BYTES = 2 ** 30;
/** A TFRecord frame's data must fit a batch whose offsets are uint32. */
const MAX_TFRECORD_SIZE = 2 ** 32 - 1 - 16;
const ALL_RECORDS = -1;
/**
 * TFRecord ranges from this size on are checked on the libuv pool. Measured on a loaded 2-core
 * machine (SSE4.2 CRC-32C): 64 KiB took 6 µs on the calling thread and 21 µs through the pool;
 * 16 MiB took 8 ms, too long to hold the event loop.
 */
const TFRECORD_POOL_BYTES = 1024 * 1024;
/** Numbers per chunk in the addon's chunk table. */
const CHUNK_FIELDS = 5;

/**
 * Decodes RecordIO records from a byte range held in memory, e.g. fetched from object storage with
 * ranged GETs: `bytes` starts at a chunk header and holds whole chunks. Decoding (CRC checks,
 * decompression) runs natively on the libuv thread pool, so the event loop stays free (a 44 KB gzip
 * range decodes to 1 MB in over a millisecond, whatever its compressed size says); records
 * never cross into JavaScript one by one. The result has the shape of `RecordIOReader.read()`: one
 * buffer, decoded into fresh memory or into `options.reuse`'s (`bytes` may be reused once the
 * promise settles); its `release()` hands them to `options.recycle`.
 *
 * Faults are those of a file read, with the same codes and messages (`CHECKSUM`, `TRUNCATED`,
 * `BAD_COMPRESSION`, ...), named by chunk and file offset (through `baseOffset` and `firstChunk`)
 * and by `source`.
 *
 * @param bytes - the range; left untouched until the promise settles.
 * @param chunks - the chunks of the range as the file's index lists them (consecutive
 * {@link ChunkInfo}s, e.g. a slice of `RecordIOReader.chunks`), or undefined to take the
 * chunk headers found in `bytes`. Given, `bytes` must hold exactly them: a header that differs is
 * `BAD_MAGIC`, and a buffer that ends early is `TRUNCATED` (after the records before it).
 * @throws TypeError / RangeError for bad arguments; RecordIOError `OUT_OF_RANGE` when `skip` and
 * `count` ask for records the range does not hold, `TOO_LARGE` past `maxDecodedBytes`, and with
 * `onCorruptChunk: 'error'` the first bad chunk's fault.
 */
export async function decodeRecordIORange(
  bytes: Uint8Array,
  chunks?: readonly ChunkInfo[],
  options?: RecordIORangeOptions,
): Promise<RecordBatch> {
  const callSite = captureCallSite(decodeRecordIORange);
  const request = recordioRequest(bytes, chunks, options);
  let result: NativeReadResult;
  try {
    const { data, bounds } = request.reuse;
    result = await getAddon().recordioDecodeRange(bytes, request.spec, request.table, data, bounds);
  } catch (error) {
    throw fromThrown(error, callSite, request.source);
  }
  return recordioBatch(result, request, callSite);
}

/**
 * {@link decodeRecordIORange} on the calling thread: for small ranges of stored (uncompressed)
 * chunks, where a hop to the thread pool costs more than the decode, and for scripts.
 */
export function decodeRecordIORangeSync(
  bytes: Uint8Array,
  chunks?: readonly ChunkInfo[],
  options?: RecordIORangeOptions,
): RecordBatch {
  const callSite = decodeRecordIORangeSync;
  const request = recordioRequest(bytes, chunks, options);
  let result: NativeReadResult;
  try {
    const { data, bounds } = request.reuse;
    result = getAddon().recordioDecodeRangeSync(bytes, request.spec, request.table, data, bounds);
  } catch (error) {
    throw fromThrown(error, callSite, request.source);
  }
  return recordioBatch(result, request, callSite);
}

/**
 * Checks and locates the TFRecord records of a byte range held in memory: `bytes` starts at a
 * record's frame. Both masked CRC-32Cs of every frame are checked and lengths are bounded: on the
 * calling thread for ranges under 1 MiB (a CRC-32C pass, well under a millisecond, cheaper than
 * the hop to the pool), on the libuv thread pool for larger ones. No record is copied: the batch's records are views into `bytes`, which must
 * therefore stay unchanged while they are in use.
 *
 * @throws TypeError / RangeError for bad arguments; TFRecordError naming the record and its file
 * offset: `CHECKSUM` (a length or data CRC), `TOO_LARGE` (a length over `maxRecordSize`, or 4 GiB
 * of bytes or more), `TRUNCATED` (a range that ends inside a frame, or before `count` records).
 */
export async function decodeTFRecordRange(
  bytes: Uint8Array,
  options?: TFRecordRangeOptions,
): Promise<RecordBatch> {
  const callSite = captureCallSite(decodeTFRecordRange);
  const request = tfrecordRequest(bytes, options);
  const { baseOffset, count, maxRecordSize } = request;
  let result: NativeTFRecordRange;
  try {
    result =
      bytes.byteLength < TFRECORD_POOL_BYTES
        ? getAddon().tfrecordDecodeRangeSync(bytes, baseOffset, count, maxRecordSize)
        : await getAddon().tfrecordDecodeRange(bytes, baseOffset, count, maxRecordSize);
  } catch (error) {
    throw fromThrown(error, callSite, request.source);
  }
  return tfrecordBatch(bytes, result, request, callSite);
}

/**
 * {@link decodeTFRecordRange} on the calling thread whatever the size. Checking is a CRC-32C pass
 * over the bytes (GB/s with SSE4.2): cheap for ranges of a few MiB, which is what the file reader
 * checks per batch on the calling thread too.
 */
export function decodeTFRecordRangeSync(bytes: Uint8Array, options?: TFRecordRangeOptions): RecordBatch {
  const callSite = decodeTFRecordRangeSync;
  const request = tfrecordRequest(bytes, options);
  let result: NativeTFRecordRange;
  try {
    result = getAddon().tfrecordDecodeRangeSync(
      bytes,
      request.baseOffset,
      request.count,
      request.maxRecordSize,
    );
  } catch (error) {
    throw fromThrown(error, callSite, request.source);
  }
  return tfrecordBatch(bytes, result, request, callSite);
}

interface RecordIORequest {
  readonly spec: NativeRangeSpec;
  readonly table: Float64Array | null;
  readonly source: string | undefined;
  readonly onSkip: ((fault: RecordIOError) => void) | undefined;
  readonly reuse: { readonly data?: ArrayBuffer; readonly bounds?: ArrayBuffer };
  readonly recycle: BatchRecycler | undefined;
}

function recordioRequest(bytes: unknown, chunks: unknown, options: unknown): RecordIORequest {
  checkBytes(bytes);
  const opts = checkOptions(options, 'options', RECORDIO_KEYS);
  const table = chunks === undefined ? null : chunkTable(chunks);
  const first = table !== null && table.length > 0 ? (chunks as readonly ChunkInfo[])[0] : undefined;
  const origin = (
    key: 'baseOffset' | 'firstChunk' | 'firstRecord',
    fromChunk: number | undefined,
  ): number => {
    const value = checkOptionalInteger(opts[key], `options.${key}`, fromChunk ?? 0);
    if (fromChunk !== undefined && value !== fromChunk) {
      invalidArgument(`${fromChunk} (as chunks[0] says)`, `options.${key}`, value, 'range');
    }
    return value;
  };
  const onSkip = opts.onSkip === undefined ? undefined : checkFunction(opts.onSkip, 'options.onSkip');
  const skipCorrupt =
    opts.onCorruptChunk !== undefined &&
    checkOneOf(opts.onCorruptChunk, 'options.onCorruptChunk', ['error', 'skip'] as const) === 'skip';
  return {
    spec: {
      baseOffset: origin('baseOffset', first?.offset),
      firstChunk: origin('firstChunk', first?.index),
      firstRecord: origin('firstRecord', first?.firstRecord),
      skip: checkOptionalInteger(opts.skip, 'options.skip', 0),
      count: opts.count === undefined ? ALL_RECORDS : checkInteger(opts.count, 'options.count'),
      skipCorrupt,
      maxDecodedBytes: checkOptionalInteger(
        opts.maxDecodedBytes,
        'options.maxDecodedBytes',
        DEFAULT_MAX_DECODED_BYTES,
        0,
        MAX_DECODED_BYTES,
      ),
    },
    table,
    source: optionalSource(opts.source),
    onSkip: onSkip as ((fault: RecordIOError) => void) | undefined,
    reuse: reuseBuffers(opts.reuse),
    recycle:
      opts.recycle === undefined
        ? undefined
        : (checkFunction(opts.recycle, 'options.recycle') as BatchRecycler),
  };
}

/** The addon's chunk table for `chunks`, which must be consecutive entries of one index. */
function chunkTable(chunks: unknown): Float64Array {
  if (!Array.isArray(chunks)) invalidArgument('an array of ChunkInfo', 'chunks', chunks, 'type');
  const table = new Float64Array(chunks.length * CHUNK_FIELDS);
  let previous: ChunkInfo | undefined;
  chunks.forEach((value: unknown, i: number) => {
    const name = `chunks[${i}]`;
    if (typeof value !== 'object' || value === null) invalidArgument('a ChunkInfo', name, value, 'type');
    const chunk = value as ChunkInfo;
    const compressor =
      typeof chunk.compressor === 'number'
        ? checkInteger(chunk.compressor, `${name}.compressor`, 0, 2 ** 32 - 1)
        : COMPRESSORS.indexOf(
            checkOneOf(chunk.compressor, `${name}.compressor`, COMPRESSORS) as CompressorName,
          );
    const index = checkInteger(chunk.index, `${name}.index`);
    const firstRecord = checkInteger(chunk.firstRecord, `${name}.firstRecord`);
    if (previous !== undefined && index !== previous.index + 1) {
      invalidArgument(
        `index ${previous.index + 1} (chunks follow each other)`,
        `${name}.index`,
        index,
        'range',
      );
    }
    if (previous !== undefined && firstRecord !== previous.firstRecord + previous.numRecords) {
      invalidArgument(
        `firstRecord ${previous.firstRecord + previous.numRecords} (chunks follow each other)`,
        `${name}.firstRecord`,
        firstRecord,
        'range',
      );
    }
    table.set(
      [
        checkInteger(chunk.offset, `${name}.offset`),
        compressor,
        checkInteger(chunk.compressedSize, `${name}.compressedSize`, 0, 2 ** 32 - 1),
        checkInteger(chunk.numRecords, `${name}.numRecords`, 0, 2 ** 32 - 1),
        firstRecord,
      ],
      i * CHUNK_FIELDS,
    );
    previous = chunk;
  });
  return table;
}

function recordioBatch(result: NativeReadResult, request: RecordIORequest, callSite: CallSite): RecordBatch {
  for (const fault of result.skipped) request.onSkip?.(located(fault, request.source, callSite));
  if (result.error !== null) throw located(result.error, request.source, callSite);
  return new RecordBatch(result.data, result.bounds, result.firstRecord, request.recycle);
}

/** `options.reuse`: two distinct ArrayBuffers, either left out (the addon would refuse one given as both). */
function reuseBuffers(value: unknown): RecordIORequest['reuse'] {
  if (value === undefined) return {};
  const reuse = checkOptions(value, 'options.reuse', ['data', 'bounds'] as const);
  const buffer = (key: 'data' | 'bounds'): ArrayBuffer | undefined => {
    const given = reuse[key];
    if (given === undefined || given instanceof ArrayBuffer) return given;
    return invalidArgument('an ArrayBuffer', `options.reuse.${key}`, given, 'type');
  };
  const data = buffer('data');
  const bounds = buffer('bounds');
  if (data !== undefined && data === bounds) {
    invalidArgument('two different ArrayBuffers', 'options.reuse.bounds', bounds, 'range');
  }
  return { data, bounds };
}

/** A fault of the addon (which names no file for memory) as a RecordIOError naming `source`. */
function located(fault: NativeFault, source: string | undefined, callSite: CallSite): RecordIOError {
  return RecordIOError.fromNative({ ...fault, path: source ?? '' }, callSite);
}

interface TFRecordRequest {
  readonly baseOffset: number;
  readonly firstRecord: number;
  readonly count: number;
  readonly maxRecordSize: number;
  readonly source: string | undefined;
}

function tfrecordRequest(bytes: unknown, options: unknown): TFRecordRequest {
  checkBytes(bytes);
  const opts = checkOptions(options, 'options', TFRECORD_KEYS);
  return {
    baseOffset: checkOptionalInteger(opts.baseOffset, 'options.baseOffset', 0),
    firstRecord: checkOptionalInteger(opts.firstRecord, 'options.firstRecord', 0),
    count: opts.count === undefined ? ALL_RECORDS : checkInteger(opts.count, 'options.count'),
    maxRecordSize: checkOptionalInteger(
      opts.maxRecordSize,
      'options.maxRecordSize',
      MAX_TFRECORD_SIZE,
      0,
      MAX_TFRECORD_SIZE,
    ),
    source: optionalSource(opts.source),
  };
}

function tfrecordBatch(
  bytes: Uint8Array,
  result: NativeTFRecordRange,
  request: TFRecordRequest,
  callSite: CallSite,
): RecordBatch {
  const { fault } = result;
  if (fault !== null) {
    const error = new TFRecordError(fault.code as RecordIOErrorCode, fault.message, {
      path: request.source,
      record: request.firstRecord + result.bounds.length / 2,
      offset: fault.offset >= 0 ? fault.offset : undefined,
    });
    throw withCallSite(error, callSite);
  }
  return new RecordBatch(bytes, result.bounds, request.firstRecord);
}

function checkBytes(bytes: unknown): void {
  if (!(bytes instanceof Uint8Array)) invalidArgument('a Uint8Array', 'bytes', bytes, 'type');
}

function optionalSource(source: unknown): string | undefined {
  if (source === undefined) return undefined;
  if (typeof source !== 'string' || source === '')
    invalidArgument('a non-empty string', 'options.source', source, 'type');
  return source;
}
