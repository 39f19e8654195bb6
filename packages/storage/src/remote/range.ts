import type { ObjectStat } from '../byte-source.js';

/**
 * Checks a `readRange` request against the object's size and returns the buffer to fill: `into`
 * (checked to hold `length` bytes) or a new one. Bad arguments throw RangeError naming the object.
 */
export function checkRange(
  object: ObjectStat,
  offset: number,
  length: number,
  into?: Uint8Array,
): Uint8Array {
  if (!Number.isSafeInteger(offset) || offset < 0) {
    throw new RangeError(`offset must be a non-negative integer, got ${offset} (reading ${object.location})`);
  }
  if (!Number.isSafeInteger(length) || length < 0) {
    throw new RangeError(`length must be a non-negative integer, got ${length} (reading ${object.location})`);
  }
  if (offset + length > object.size) {
    throw new RangeError(
      `bytes ${offset}-${offset + length - 1} end past the end of ${object.location} (${object.size} bytes)`,
    );
  }
  if (into === undefined) return new Uint8Array(length);
  if (into.byteLength < length) {
    throw new RangeError(
      `into holds ${into.byteLength} bytes, fewer than the ${length} asked (reading ${object.location})`,
    );
  }
  return into;
}

/** A parsed `Content-Range: bytes start-end/total` header (`total` undefined for `*`). */
export interface ContentRange {
  readonly start: number;
  readonly end: number;
  readonly total: number | undefined;
}

/** Parses a `Content-Range` header; `undefined` when it is absent or not a byte range. */
export function parseContentRange(header: string | null | undefined): ContentRange | undefined {
  const match = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header?.trim() ?? '');
  if (match === null) return undefined;
  return {
    start: Number(match[1]),
    end: Number(match[2]),
    total: match[3] === '*' ? undefined : Number(match[3]),
  };
}
