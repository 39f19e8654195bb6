import { EdlError } from '@edl/common';
import type { NativeFault } from './native/addon-types.js';

/**
 * Stable error codes of {@link RecordIOError}. Programs branch on these, never on messages.
 *
 * - `IO`: the file could not be opened, read or written (the message includes the system error).
 * - `BAD_MAGIC`: a chunk header does not start with the RecordIO magic number.
 * - `CHECKSUM`: a chunk's payload does not match the CRC in its header (or a snappy frame's CRC).
 * - `TRUNCATED`: the file ends inside a chunk header or payload.
 * - `BAD_COMPRESSION`: a payload does not decompress, or decompresses to malformed records.
 * - `UNKNOWN_COMPRESSOR`: a chunk header names a compressor other than none, snappy, gzip.
 * - `OUT_OF_RANGE`: a record range outside the file.
 * - `TOO_LARGE`: one read would deliver more than 4 GiB - 1 bytes.
 * - `CLOSED`: the reader or writer was already closed.
 * - `NATIVE_LOAD`: the native addon could not be loaded.
 * - `NOT_SEEKABLE`: random access was asked of a compressed TFRecord file, which can only be read
 *   from its start.
 */
export type RecordIOErrorCode =
  | 'IO'
  | 'BAD_MAGIC'
  | 'CHECKSUM'
  | 'TRUNCATED'
  | 'BAD_COMPRESSION'
  | 'UNKNOWN_COMPRESSOR'
  | 'OUT_OF_RANGE'
  | 'TOO_LARGE'
  | 'CLOSED'
  | 'NATIVE_LOAD'
  | 'NOT_SEEKABLE';

const KNOWN_CODES: ReadonlySet<string> = new Set<RecordIOErrorCode>([
  'IO',
  'BAD_MAGIC',
  'CHECKSUM',
  'TRUNCATED',
  'BAD_COMPRESSION',
  'UNKNOWN_COMPRESSOR',
  'OUT_OF_RANGE',
  'TOO_LARGE',
  'CLOSED',
  'NATIVE_LOAD',
  'NOT_SEEKABLE',
]);

/** Where a fault happened, as every error of @edl/recordio can tell it; each field is optional. */
export interface FaultLocation {
  /** The file concerned. */
  readonly path?: string | undefined;
  /** Byte offset in the file (of the chunk header, or of the fault when known). */
  readonly offset?: number | undefined;
  /** The underlying error, if any. */
  readonly cause?: unknown;
}

/** Where a {@link RecordIOError} happened; every field is optional because not every error has it. */
export interface RecordIOErrorLocation extends FaultLocation {
  /** Index of the chunk concerned. */
  readonly chunk?: number | undefined;
  /** Records of the chunk that were not delivered because of this fault. */
  readonly records?: number | undefined;
}

/**
 * Every failure of @edl/recordio that is not a bad argument. The message names the code, the chunk,
 * the byte offset and the file, e.g. `CHECKSUM: chunk 0 at byte 0 of /data/x.rio: ...`, so a log
 * line alone says where to look.
 */
export class RecordIOError extends EdlError<RecordIOErrorCode> {
  override readonly name: string = 'RecordIOError';
  /** The file concerned, when there is one. */
  readonly path: string | undefined;
  /** Index of the chunk concerned, when there is one. */
  readonly chunk: number | undefined;
  /**
   * Byte offset in the file: of the fault itself when the decoder can tell (a bad snappy frame, a
   * damaged header), else of the chunk's header or payload.
   */
  readonly offset: number | undefined;
  /** Records of the chunk that were not delivered, when known. */
  readonly records: number | undefined;
  /** The text of the fault without the location prefix. */
  readonly detail: string;

  /**
   * @param code - stable error code.
   * @param detail - what went wrong, without the location (it is added from `location`).
   * @param location - the file, chunk, offset and cause.
   */
  constructor(code: RecordIOErrorCode, detail: string, location: RecordIOErrorLocation = {}) {
    const where: string[] = [];
    if (location.chunk !== undefined) where.push(`chunk ${location.chunk}`);
    if (location.offset !== undefined) where.push(`at byte ${location.offset}`);
    super(code, faultMessage(code, detail, where, location.path), { cause: location.cause });
    this.detail = detail;
    this.path = location.path;
    this.chunk = location.chunk;
    this.offset = location.offset;
    this.records = location.records;
  }

  /**
   * Rebuilds a fault reported by the addon as a RecordIOError whose stack is the one captured at the
   * public API call (`callSite`), since the native stack says nothing useful about the caller.
   */
  static fromNative(fault: NativeFault, callSite?: CallSite): RecordIOError {
    const error = new RecordIOError(toCode(fault.code), fault.message, {
      path: fault.path || undefined,
      chunk: fault.chunk >= 0 ? fault.chunk : undefined,
      offset: fault.offset >= 0 ? fault.offset : undefined,
      records: fault.records >= 0 ? fault.records : undefined,
    });
    return withCallSite(error, callSite);
  }
}

/**
 * Turns anything the addon threw into a RecordIOError with the caller's stack (errors with a known
 * `code`), or returns it unchanged (anything else, e.g. a TypeError from a binding assertion).
 */
export function fromThrown(thrown: unknown, callSite?: CallSite, fallbackPath?: string): unknown {
  if (!(thrown instanceof Error) || thrown instanceof RecordIOError) return thrown;
  const candidate = thrown as Error & { code?: unknown; path?: unknown; chunk?: unknown; offset?: unknown };
  if (typeof candidate.code !== 'string' || !KNOWN_CODES.has(candidate.code)) return thrown;
  const path = typeof candidate.path === 'string' && candidate.path !== '' ? candidate.path : fallbackPath;
  const chunk = typeof candidate.chunk === 'number' && candidate.chunk >= 0 ? candidate.chunk : undefined;
  const offset = typeof candidate.offset === 'number' && candidate.offset >= 0 ? candidate.offset : undefined;
  const error = new RecordIOError(candidate.code as RecordIOErrorCode, candidate.message, {
    path,
    chunk,
    offset,
  });
  return withCallSite(error, callSite);
}

/** A public API function on the current stack. */
export type ApiFunction = (...args: never[]) => unknown;

/**
 * Where an error should appear to come from. Synchronous paths pass the public API function: the
 * stack is captured only if an error is thrown, cut at that function. Paths that throw after an
 * `await` pass an Error captured at the call ({@link captureCallSite}), since by then the caller's
 * frames are gone; capturing costs a few microseconds, once per call.
 */
export type CallSite = Error | ApiFunction;

/** Captures the stack of a public API call, to be given to errors that surface later. */
export function captureCallSite(api: ApiFunction): Error {
  // Not `new Error()`: it would capture a stack of its own before this one replaces it (twice the
  // cost, once per task on a worker's read path).
  const site = Object.create(Error.prototype) as Error;
  Error.captureStackTrace(site, api);
  return site;
}

/** Gives `error` the stack of `callSite` and returns it. */
export function withCallSite(error: RecordIOError, callSite: CallSite | undefined): RecordIOError {
  if (typeof callSite === 'function') {
    Error.captureStackTrace(error, callSite);
  } else if (callSite?.stack !== undefined) {
    const frames = callSite.stack.slice(callSite.stack.indexOf('\n') + 1);
    error.stack = `${error.name}: ${error.message}\n${frames}`;
  }
  return error;
}

function toCode(code: string): RecordIOErrorCode {
  // An unknown code from a newer addon still surfaces, as the closest generic failure.
  return KNOWN_CODES.has(code) ? (code as RecordIOErrorCode) : 'IO';
}

/**
 * `CODE: <where> of <path>: <detail>` on one line (the CLI prints messages as single-line errors),
 * e.g. `CHECKSUM: chunk 0 at byte 0 of /data/x.rio: ...`.
 */
export function faultMessage(
  code: RecordIOErrorCode,
  detail: string,
  where: readonly string[],
  path: string | undefined,
): string {
  const parts = path === undefined ? where : [...where, where.length > 0 ? `of ${path}` : path];
  const text = detail.replace(/\s*\n\s*/g, ' ');
  return parts.length > 0 ? `${code}: ${parts.join(' ')}: ${text}` : `${code}: ${text}`;
}
