import { checkInteger, checkSafeInteger, invalidArgument } from '@edl/common';
import { fmix32, hashIntegers } from './hash.js';

/** Largest supported domain: 2^53 - 1, so every index and result is a safe integer. */
export const MAX_SHUFFLE_LENGTH = Number.MAX_SAFE_INTEGER;
/**
 * 2^-26: a round output cut to 26 bits times the modulus (<= 2^27) is below 2^53, so scaling it by
 * 2^-26 and truncating maps it exactly and deterministically into `[0, modulus)` without a division.
 */
const TWO_POW_MINUS_26 = 1 / 67108864;

/**
 * The domain a Feistel network permutes to shuffle `[0, length)`: pairs `(high, low)` with `high` in
 * `[0, 2^highBits)` and `low` in `[0, modulus)`, i.e. the integers `[0, 2^highBits * modulus)`.
 */
export interface FeistelDomain {
  readonly highBits: number;
  readonly modulus: number;
}

/**
 * The smallest convenient domain covering `[0, length)`: `highBits = floor(b / 2)` for the bit width
 * `b` of `length`, and `modulus = ceil(length / 2^highBits)`. It exceeds `length` by less than
 * `2^highBits` (about `sqrt(length)`), so cycle walking almost never needs a second pass; a domain of
 * the next power of two would need two passes on average at `length = 2^k + 1`.
 */
export function feistelDomain(length: number): FeistelDomain {
  let bits = 0;
  // A loop, not Math.log2: exact for every length, 2^k + 1 included.
  while (2 ** bits < length) bits++;
  const highBits = bits >>> 1;
  return { highBits, modulus: Math.max(1, Math.ceil(length / 2 ** highBits)) };
}

/**
 * The key of one epoch of a shuffle: a mixing hash of `(seed, epoch)`, never `seed + epoch`, so epoch
 * `e` of seed `s` and epoch `e - 1` of seed `s + 1` are unrelated permutations.
 */
export function epochSeed(seed: number, epoch: number): number {
  const [h1, h2] = hashIntegers([seed, epoch, 0x5eed]);
  // 52 bits of the two words: a safe integer that IndexShuffler hashes again.
  return (h1 & 0xfffff) * 4294967296 + h2;
}

/**
 * A pseudo-random permutation of `[0, length)` computed one index at a time: O(1) memory, no table.
 *
 * It is a 4-round Feistel network on pairs `(high, low)`, `high` in `[0, 2^h)` and `low` in `[0, m)`
 * (see `feistelDomain`): rounds alternate `high ^= F(low)` (masked to h bits) and
 * `low = (low + F(high)) mod m`, each invertible, so the network permutes `[0, 2^h * m)`. Results
 * that fall outside `[0, length)` are walked along their cycle until they land inside ("cycle
 * walking"), which restricts the permutation to `[0, length)` exactly, for every length, `2^k + 1`
 * included. Halves are at most 27 bits, so every round is int32 math plus one exact float product.
 * Four rounds are the Luby-Rackoff bound for a strong pseudo-random permutation when the round
 * function is pseudo-random; here it is a keyed full-avalanche 32-bit mix.
 */
export class IndexShuffler {
  /** Size of the permuted range. */
  readonly length: number;
  /** The seed the permutation was derived from. */
  readonly seed: number;
  readonly #highMask: number;
  readonly #modulus: number;
  readonly #modulusInverse: number;
  readonly #lengthHigh: number;
  readonly #lengthLow: number;
  readonly #k0: number;
  readonly #k1: number;
  readonly #k2: number;
  readonly #k3: number;

  /**
   * @param length - size of the range, an integer in `[0, 2^53 - 1]`.
   * @param seed - any safe integer; different seeds give unrelated permutations.
   * @param domain - the Feistel domain, `feistelDomain(length)` by default; another (covering
   *   `length`) is only useful to verify the cipher, see `overDomain`.
   */
  constructor(length: number, seed: number, domain: FeistelDomain = feistelDomain(length)) {
    checkInteger(length, 'length', 0, MAX_SHUFFLE_LENGTH);
    this.length = length;
    this.seed = checkSafeInteger(seed, 'seed');
    const { highBits, modulus } = domain;
    checkInteger(highBits, 'domain.highBits', 0, 26);
    checkInteger(modulus, 'domain.modulus', 1, 2 ** 27);
    if (2 ** highBits * modulus < length)
      invalidArgument(`a domain covering length ${length}`, 'domain', domain);
    this.#highMask = 2 ** highBits - 1;
    this.#modulus = modulus;
    this.#modulusInverse = 1 / modulus;
    this.#lengthHigh = Math.floor(length / modulus);
    this.#lengthLow = length - this.#lengthHigh * modulus;
    const [k1, k2] = hashIntegers([seed, highBits, modulus]);
    const key = (round: number) =>
      fmix32(k1 + Math.imul(round + 1, 0x9e3779b9)) ^ fmix32(k2 ^ Math.imul(round, 0x85ebca6b));
    this.#k0 = key(0);
    this.#k1 = key(1);
    this.#k2 = key(2);
    this.#k3 = key(3);
  }

  /**
   * The bare Feistel permutation of a whole domain `[0, 2^highBits * modulus)`, with no cycle
   * walking: every length whose `feistelDomain` is `domain` walks this same permutation. For tests.
   */
  static overDomain(domain: FeistelDomain, seed: number): IndexShuffler {
    return new IndexShuffler(2 ** domain.highBits * domain.modulus, seed, domain);
  }

  /** The position `index` is moved to: a bijection of `[0, length)`. */
  get(index: number): number {
    if (!(index >= 0 && index < this.length && Math.floor(index) === index)) {
      checkInteger(index, 'index', 0, Math.max(0, this.length - 1));
      throw new RangeError(`Expected an index below length ${this.length} for index but received ${index}`);
    }
    const m = this.#modulus;
    const highMask = this.#highMask;
    const lengthHigh = this.#lengthHigh;
    const lengthLow = this.#lengthLow;
    const k0 = this.#k0;
    const k1 = this.#k1;
    const k2 = this.#k2;
    const k3 = this.#k3;
    let q = Math.floor(index * this.#modulusInverse);
    let r = index - q * m;
    // The float quotient can be off by one just below an integer: settle it exactly.
    if (r < 0) {
      q--;
      r += m;
    } else if (r >= m) {
      q++;
      r -= m;
    }
    // Both halves fit in 27 bits: keep them int32 in the loop whatever the size of `index`.
    let high = q | 0;
    let low = r | 0;
    // Walk the cycle on the two halves; `(high, low) >= (lengthHigh, lengthLow)` is `x >= length`.
    // `low = (low + f) mod m` is computed without a branch (`low + f - m`, plus m if negative): a
    // data-dependent branch here mispredicts half the time and doubles the cost of a pass.
    do {
      high ^= round(low, k0) & highMask;
      low += (((round(high, k1) >>> 6) * m * TWO_POW_MINUS_26) | 0) - m;
      low += (low >> 31) & m;
      high ^= round(low, k2) & highMask;
      low += (((round(high, k3) >>> 6) * m * TWO_POW_MINUS_26) | 0) - m;
      low += (low >> 31) & m;
    } while (high > lengthHigh || (high === lengthHigh && low >= lengthLow));
    return high * m + low;
  }
}

/** The Feistel round function: a keyed 32-bit mix of a half (at most 27 bits). */
function round(half: number, key: number): number {
  let h = Math.imul(half ^ key, 0x9e3779b1);
  h ^= h >>> 15;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  return h ^ (h >>> 16);
}

let cached: IndexShuffler | undefined;

/**
 * `new IndexShuffler(length, seed).get(index)`, with the shuffler of the last `(length, seed)` kept,
 * so a loop over one permutation costs no setup per call.
 */
export function indexShuffle(index: number, length: number, seed: number): number {
  if (cached === undefined || cached.length !== length || cached.seed !== seed) {
    cached = new IndexShuffler(length, seed);
  }
  return cached.get(index);
}
