import { describe, expect, it } from 'vitest';
import {
  epochSeed,
  type FeistelDomain,
  feistelDomain,
  IndexShuffler,
  indexShuffle,
} from '../../src/dataset/index-shuffle.js';

function sameDomain(a: FeistelDomain, b: FeistelDomain): boolean {
  return a.highBits === b.highBits && a.modulus === b.modulus;
}

/** Every `IndexShuffler(n, seed).get(i)` for i < n, checked to be a permutation with a reused stamp array. */
function expectPermutation(n: number, seed: number, stamp: Uint32Array, mark: number): void {
  const shuffler = new IndexShuffler(n, seed);
  for (let i = 0; i < n; i++) {
    const x = shuffler.get(i);
    if (!(x >= 0 && x < n) || stamp[x] === mark) {
      throw new Error(`n=${n} seed=${seed}: index ${i} maps to ${x}, out of range or already taken`);
    }
    stamp[x] = mark;
  }
}

describe('IndexShuffler', () => {
  it('is a permutation for EVERY n <= 70,000', () => {
    // Lengths with the same Feistel domain D = [0, 2^h * m) walk the same bare permutation P of D,
    // which IndexShuffler.overDomain(D) computes with no walking. For each domain the test starts
    // from g = P and walks n down from |D|, keeping g equal to the cycle walk of P into [0, n):
    // removing n - 1 only redirects the one index that mapped to n - 1 to where n - 1 mapped. For
    // EVERY n it checks that g is a permutation of [0, n) (a stamp array, reused) and that the real
    // IndexShuffler(n, seed) agrees with g: at every index for n <= 4096, at 64 spread indices
    // (both ends included) above.
    const seed = 1234;
    const maxN = 70_000;
    const stamp = new Uint32Array(2 ** 18);
    let mark = 0;
    let checked = 0;
    let n = 1;
    while (n <= maxN) {
      const domain = feistelDomain(n);
      // The lengths sharing this domain: n .. last.
      let last = n;
      while (last < maxN && sameDomain(feistelDomain(last + 1), domain)) last++;
      const size = 2 ** domain.highBits * domain.modulus;
      const bare = IndexShuffler.overDomain(domain, seed);
      const g = new Int32Array(size);
      const inverse = new Int32Array(size);
      mark++;
      for (let i = 0; i < size; i++) {
        const x = bare.get(i);
        if (stamp[x] === mark) throw new Error(`bare permutation of ${JSON.stringify(domain)} repeats ${x}`);
        stamp[x] = mark;
        g[i] = x;
        inverse[x] = i;
      }
      for (let k = size; k >= n; k--) {
        if (k <= last) {
          mark++;
          for (let i = 0; i < k; i++) {
            const x = g[i]!;
            if (x >= k || stamp[x] === mark)
              throw new Error(`n=${k}: index ${i} maps to ${x}, taken or out of range`);
            stamp[x] = mark;
          }
          const real = new IndexShuffler(k, seed);
          const samples = k <= 4096 ? k : 64;
          for (let s = 0; s < samples; s++) {
            const i = samples === k ? s : Math.floor((s * (k - 1)) / (samples - 1));
            if (real.get(i) !== g[i])
              throw new Error(`n=${k}: get(${i}) = ${real.get(i)} but the cycle walk gives ${g[i]}`);
          }
          checked++;
        }
        const from = inverse[k - 1]!;
        const to = g[k - 1]!;
        if (from !== k - 1) {
          g[from] = to;
          inverse[to] = from;
        }
      }
      n = last + 1;
    }
    expect(checked).toBe(maxN);
  }, 120_000);

  it('is a permutation at n = 2^k + 1, 2^k - 1 and 2^k for k up to 24 (where Grain repeats an index)', () => {
    const stamp = new Uint32Array(2 ** 24 + 2);
    let mark = 0;
    for (let k = 1; k <= 24; k++) {
      for (const n of k <= 20 ? [2 ** k - 1, 2 ** k, 2 ** k + 1] : [2 ** k + 1]) {
        if (n > 0) expectPermutation(n, 99 + k, stamp, ++mark);
      }
    }
  }, 120_000);

  it('stays in range and injective on samples of huge domains (up to 2^53 - 1)', () => {
    for (const n of [2 ** 31 + 1, 2 ** 32, 2 ** 40 + 1, 2 ** 47 - 3, 2 ** 53 - 1]) {
      const shuffler = new IndexShuffler(n, 5);
      const seen = new Set<number>();
      // A contiguous run at the start and one at the end: both must map to distinct in-range values.
      for (const start of [0, n - 50_000]) {
        for (let i = start; i < start + 50_000; i++) {
          const x = shuffler.get(i);
          if (!(Number.isSafeInteger(x) && x >= 0 && x < n)) throw new Error(`n=${n}: get(${i}) = ${x}`);
          seen.add(x);
        }
      }
      expect(seen.size).toBe(100_000);
      // The images are spread over the whole domain, not near the inputs.
      let high = 0;
      for (const x of seen) if (x >= n / 2) high++;
      expect(high / seen.size).toBeGreaterThan(0.45);
      expect(high / seen.size).toBeLessThan(0.55);
    }
  });

  it('looks random: few fixed points, neighbours land far apart, seeds give unrelated orders', () => {
    const n = 100_000;
    const a = new IndexShuffler(n, 1);
    const b = new IndexShuffler(n, 2);
    let fixed = 0;
    let same = 0;
    let near = 0;
    for (let i = 0; i < n; i++) {
      if (a.get(i) === i) fixed++;
      if (a.get(i) === b.get(i)) same++;
      if (i > 0 && Math.abs(a.get(i) - a.get(i - 1)) < n / 100) near++;
    }
    // A random permutation has ~1 fixed point and ~1 agreement; ~2% of neighbours within n/100.
    expect(fixed).toBeLessThan(10);
    expect(same).toBeLessThan(10);
    expect(near / n).toBeLessThan(0.03);
  });

  it('positions are uniform over seeds and outputs are uniform in their low bits (chi-square)', () => {
    // Where element 7 of [0, 40) lands, over 8000 seeds: uniform over the 40 positions.
    const n = 40;
    const counts = new Array<number>(n).fill(0);
    let ascending = 0;
    const seeds = 8000;
    for (let seed = 0; seed < seeds; seed++) {
      const s = new IndexShuffler(n, seed);
      counts[s.get(7)]!++;
      if (s.get(3) < s.get(4)) ascending++;
    }
    const expected = seeds / n;
    const chi = counts.reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
    // 39 degrees of freedom: the 99.9% quantile is about 72.
    expect(chi).toBeLessThan(72);
    expect(Math.abs(ascending / seeds - 0.5)).toBeLessThan(0.03);
    // The low 8 bits of the images of a contiguous run in a huge domain.
    const big = new IndexShuffler(2 ** 40 + 1, 17);
    const low = new Array<number>(256).fill(0);
    for (let i = 0; i < 256 * 200; i++) low[big.get(1_000_000 + i) % 256]!++;
    const chiLow = low.reduce((sum, c) => sum + (c - 200) ** 2 / 200, 0);
    // 255 degrees of freedom: the 99.9% quantile is about 330.
    expect(chiLow).toBeLessThan(330);
  });

  it('is deterministic and indexShuffle matches the class', () => {
    const s = new IndexShuffler(1000, 42);
    const viaFunction = Array.from({ length: 1000 }, (_, i) => indexShuffle(i, 1000, 42));
    const viaNew = Array.from({ length: 1000 }, (_, i) => new IndexShuffler(1000, 42).get(i));
    const viaOne = Array.from({ length: 1000 }, (_, i) => s.get(i));
    expect(viaFunction).toEqual(viaOne);
    expect(viaNew).toEqual(viaOne);
    expect(new Set(viaOne).size).toBe(1000);
  });

  it('epoch keys do not alias: epoch e of seed s differs from epoch e-1 of seed s+1', () => {
    const n = 10_000;
    const keys = new Set<number>();
    for (let seed = 0; seed < 50; seed++) {
      for (let epoch = 0; epoch < 50; epoch++) keys.add(epochSeed(seed, epoch));
    }
    expect(keys.size).toBe(2500);
    for (const [s, e] of [
      [0, 1],
      [7, 3],
      [123456789, 1000],
    ] as const) {
      const x = new IndexShuffler(n, epochSeed(s, e));
      const y = new IndexShuffler(n, epochSeed(s + 1, e - 1));
      let equal = 0;
      for (let i = 0; i < n; i++) if (x.get(i) === y.get(i)) equal++;
      expect(equal).toBeLessThan(10);
    }
  });

  it('rejects bad arguments with the standard messages', () => {
    expect(() => new IndexShuffler(-1, 0)).toThrow(
      new RangeError('Expected a non-negative integer for length but received -1'),
    );
    expect(() => new IndexShuffler(10, 1.5)).toThrow(
      new RangeError('Expected a safe integer for seed but received 1.5'),
    );
    expect(feistelDomain(2 ** 16 + 1)).toEqual({ highBits: 8, modulus: 257 });
    expect(() => new IndexShuffler(100, 0, { highBits: 3, modulus: 12 })).toThrow(TypeError);
    const s = new IndexShuffler(10, 0);
    expect(() => s.get(10)).toThrow(
      new RangeError('Expected an integer in [0, 9] for index but received 10'),
    );
    expect(() => s.get(0.5)).toThrow(RangeError);
    expect(() => new IndexShuffler(0, 0).get(0)).toThrow(RangeError);
  });
});
