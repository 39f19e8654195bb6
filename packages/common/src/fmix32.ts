/**
 * MurmurHash3's 32-bit finalizer: a bijection of uint32 in which every input bit flips each output
 * bit with probability about 1/2. Shared by the dataset index shuffle and the parameter servers' row
 * placement; part of what a saved shuffle or table means, so never to be changed.
 */
export function fmix32(value: number): number {
  let h = value | 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
