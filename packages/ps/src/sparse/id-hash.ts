/**
 * The integer hashing behind row placement and row initialization. It is specified exactly (and in
 * packages/ps/README.md) because it is part of the model: a shard process, a restarted job and a
 * checkpoint restored onto a different number of shards must all agree on it.
 */

import { fmix32 } from '@edl/common';

export { fmix32 };

const TWO_POW_32 = 2 ** 32;

/** The largest row id: ids are non-negative integers that a double holds exactly. */
export const MAX_ROW_ID = Number.MAX_SAFE_INTEGER;

/** 32-bit FNV-1a of a string's UTF-16 code units (table names are short; no encoder needed). */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A 32-bit hash of row id `id` (an integer in [0, 2^53)) under `salt`:
 * `fmix32(low32(id) + fmix32(high21(id) ^ salt))`. For a fixed high part and salt it is a bijection
 * of the low 32 bits, so ids below 2^32 never collide under one salt.
 */
export function hashRowId(id: number, salt: number): number {
  const low = id >>> 0;
  const high = Math.floor(id / TWO_POW_32);
  return fmix32(low + fmix32((high ^ salt) >>> 0));
}

/** Whether `id` is a valid row id (see {@link MAX_ROW_ID}). */
export function isRowId(id: number): boolean {
  return Number.isSafeInteger(id) && id >= 0;
}
