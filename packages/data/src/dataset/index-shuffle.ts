import { fmix32, hashIntegers } from './hash.js';
import { expectInteger, expectSeed } from './validate.js';

/**
 * Number of Feistel half-rounds. Four is the Luby-Rackoff bound for a pseudo-random permutation when
 * each round function is itself pseudo-random (here a full-avalanche 32-bit mix); more rounds would
 * only slow the cycle walk.
 */
const ROUNDS = 4;
/** Largest bit width handled with pure int32 operations (the whole value fits in 31 bits). */
const INT_PATH_MAX_BITS = 30;
/** Largest supported domain: 2^53 - 1, so every index and result is a safe integer. */
export const MAX_SHUFFLE_LENGTH = Number.MAX_SAFE_INTEGER;

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
 * It is a Feistel network over the smallest power of two `2^b >= length`, split into a high half of
 * `floor(b / 2)` bits and a low half of `ceil(b / 2)` bits that update each other alternately (an
 * unbalanced Feistel network: each half-round is invertible, so the whole is a permutation of
 * `[0, 2^b)`). Indices that land outside `[0, length)` are walked along their cycle until they land
 * inside ("cycle walking"), which restricts the permutation to `[0, length)` exactly, for every length
 * including `2^k + 1`. Each half is at most 27 bits, so the round function is int32 math.
 */
export class IndexShuffler {
  /** Size of the permuted domain. */
  readonly length: number;
  /** The seed the permutation was derived from. */
  readonly seed: number;
  readonly #lowBits: number;
  readonly #lowMask: number;
  readonly #highMask: number;
  readonly #lowScale: number;
  /** 1 / #lowScale, exact (a power of two): a multiply instead of a division. */
  readonly #lowScaleInverse: number;
  readonly #keys: Int32Array;
  readonly #intPath: boolean;
  readonly #lengthHigh: number;
  readonly #lengthLow: number;

  /**
   * @param length - size of the domain, an integer in `[0, 2^53 - 1]`.
   * @param seed - any safe integer; different seeds give unrelated permutations.
   */
  constructor(length: number, seed: number) {
    this.length = expectInteger(length, 'length', 0, MAX_SHUFFLE_LENGTH);
    this.seed = expectSeed(seed, 'seed');
    let bits = 0;
    // Loop rather than Math.log2: exact for every length, 2^k + 1 included.
    while (2 ** bits < length) bits++;
    const highBits = bits >>> 1;
    this.#lowBits = bits - highBits;
    this.#lowMask = 2 ** this.#lowBits - 1;
    this.#highMask = 2 ** highBits - 1;
    this.#lowScale = 2 ** this.#lowBits;
    this.#lowScaleInverse = 2 ** -this.#lowBits;
    this.#intPath = bits <= INT_PATH_MAX_BITS;
    this.#lengthHigh = Math.floor(length / this.#lowScale);
    this.#lengthLow = length - this.#lengthHigh * this.#lowScale;
    this.#keys = new Int32Array(ROUNDS);
    const [k1, k2] = hashIntegers([seed, bits]);
    for (let round = 0; round < ROUNDS; round++) {
      this.#keys[round] =
        fmix32(k1 + Math.imul(round + 1, 0x9e3779b9)) ^ fmix32(k2 ^ Math.imul(round, 0x85ebca6b));
    }
  }

  /** The position `index` is moved to: a bijection of `[0, length)`. */
  get(index: number): number {
    if (!(index >= 0 && index < this.length && Math.floor(index) === index)) {
      expectInteger(index, 'index', 0, Math.max(0, this.length - 1));
      throw new RangeError(`Expected an index below length ${this.length} for index but received ${index}`);
    }
    const keys = this.#keys;
    const k0 = keys[0]!;
    const k1 = keys[1]!;
    const k2 = keys[2]!;
    const k3 = keys[3]!;
    const lowMask = this.#lowMask;
    const highMask = this.#highMask;
    const lengthHigh = this.#lengthHigh;
    const lengthLow = this.#lengthLow;
    // Split once, walk the cycle on the two int halves, join once: the comparison with `length` is
    // done half by half, so no pass leaves int32 arithmetic whatever the width.
    let high: number;
    let low: number;
    if (this.#intPath) {
      high = index >>> this.#lowBits;
      low = index & lowMask;
    } else {
      high = Math.floor(index * this.#lowScaleInverse);
      low = index - high * this.#lowScale;
    }
    do {
      high ^= round(low, k0) & highMask;
      low ^= round(high, k1) & lowMask;
      high ^= round(low, k2) & highMask;
      low ^= round(high, k3) & lowMask;
    } while (high > lengthHigh || (high === lengthHigh && low >= lengthLow));
    return this.#intPath ? ((high << this.#lowBits) | low) >>> 0 : high * this.#lowScale + low;
  }
}

/**
 * The Feistel round function: a keyed two-multiply mix of a half (at most 27 bits). A one-multiply
 * round is a third faster but fails the chi-square test of positions over seeds (test/dataset).
 */
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
