/**
 * 32-bit integer hashing shared by the index shuffle and the per-index random generators. Everything
 * stays in int32/uint32 arithmetic (`Math.imul`, shifts) so V8 keeps it in registers.
 */

import { fmix32 } from '@edl/common';

export { fmix32 };

const TWO_POW_32 = 4294967296;

/** Low 32 bits of a safe integer (two's complement for negative values). */
export function low32(value: number): number {
  return value >>> 0;
}

/** High bits of a safe integer above the low 32 (two's complement for negative values). */
export function high32(value: number): number {
  return Math.floor(value / TWO_POW_32) | 0;
}

/**
 * Hashes a sequence of safe integers into two independent 32-bit words. Each value is absorbed as
 * its low and high word with a position-dependent constant, so (a, b) and (b, a), or (s, e) and
 * (s + 1, e - 1), land on unrelated outputs.
 */
export function hashIntegers(values: readonly number[]): [number, number] {
  let h1 = 0x243f6a88;
  let h2 = 0x85a308d3;
  for (let i = 0; i < values.length; i++) {
    const value = values[i] ?? 0;
    const lo = low32(value);
    const hi = high32(value);
    h1 = fmix32(h1 ^ lo ^ Math.imul(i + 1, 0x9e3779b9));
    h1 = fmix32(h1 ^ hi ^ 0x7f4a7c15);
    h2 = fmix32((h2 + lo) ^ Math.imul(i + 1, 0x632be5ab));
    h2 = fmix32(h2 ^ Math.imul(hi, 0x27d4eb2f) ^ h1);
  }
  return [h1, fmix32(h2 ^ 0x9e3779b9)];
}
