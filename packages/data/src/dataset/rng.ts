import { fmix32, hashIntegers } from './hash.js';

/**
 * A small deterministic random generator (sfc32: 128 bits of state, passes PractRand to many GB),
 * created per element by `randomMap` from `(seed, index)`, so an element's randomness does not depend
 * on the order or the process in which elements are computed.
 */
export class Rng {
  #a: number;
  #b: number;
  #c: number;
  #d: number;

  /** A generator for element `index` of a stream keyed by `seed` (both safe integers). */
  static forIndex(seed: number, index: number): Rng {
    const [h1, h2] = hashIntegers([seed, index]);
    return new Rng(h1, h2, fmix32(h1 ^ 0x6a09e667), fmix32(h2 ^ 0xbb67ae85));
  }

  private constructor(a: number, b: number, c: number, d: number) {
    this.#a = a | 0;
    this.#b = b | 0;
    this.#c = c | 0;
    this.#d = d | 1;
    // Discard the first outputs: they are still correlated with the seed words.
    for (let i = 0; i < 12; i++) this.uint32();
  }

  /** A uniform integer in `[0, 2^32)`. */
  uint32(): number {
    const a = this.#a;
    const b = this.#b;
    const c = this.#c;
    const d = this.#d;
    const t = (((a + b) | 0) + d) | 0;
    this.#d = (d + 1) | 0;
    this.#a = b ^ (b >>> 9);
    this.#b = (c + (c << 3)) | 0;
    this.#c = ((c << 21) | (c >>> 11)) + t;
    this.#c |= 0;
    return t >>> 0;
  }

  /** A uniform float in `[0, 1)` with 53 random bits. */
  float(): number {
    return ((this.uint32() >>> 5) * 67108864 + (this.uint32() >>> 6)) / 9007199254740992;
  }

  /** A uniform integer in `[0, bound)`, without modulo bias; `bound` in `[1, 2^32]`. */
  integer(bound: number): number {
    if (!(Number.isInteger(bound) && bound >= 1 && bound <= 4294967296)) {
      throw new RangeError(`Expected an integer in [1, 4294967296] for bound but received ${bound}`);
    }
    // Rejection sampling on the largest multiple of bound below 2^32.
    const limit = 4294967296 - (4294967296 % bound);
    let x = this.uint32();
    while (x >= limit) x = this.uint32();
    return x % bound;
  }
}
