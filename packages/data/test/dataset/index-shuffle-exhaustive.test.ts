import { describe, expect, it } from 'vitest';
import { IndexShuffler } from '../../src/dataset/index-shuffle.js';

// The issue asks for a check of EVERY n <= 70,000 through the real public path, not a model of it:
// about 2.45e9 calls of IndexShuffler.get, some tens of seconds. It has a file of its own so that
// vitest runs it beside the other files instead of after them.
describe('IndexShuffler, exhaustively', () => {
  it('IndexShuffler(n, seed).get is a permutation of [0, n) for every n <= 70,000', {
    timeout: 600_000,
  }, () => {
    const maxN = 70_000;
    const stamp = new Uint32Array(maxN);
    let mark = 0;
    let calls = 0;
    const seed = 1234;
    for (let n = 1; n <= maxN; n++) {
      const shuffler = new IndexShuffler(n, seed);
      mark++;
      for (let i = 0; i < n; i++) {
        const x = shuffler.get(i);
        if (!(x >= 0 && x < n) || stamp[x] === mark) {
          throw new Error(`n=${n} seed=${seed}: index ${i} maps to ${x}, out of range or already taken`);
        }
        stamp[x] = mark;
      }
      calls += n;
    }
    expect(calls).toBe((maxN * (maxN + 1)) / 2);
  });
});
