import { describe, expect, it } from 'vitest';
import { MixSchedule } from '../../src/dataset/mix-schedule.js';
import { Rng } from '../../src/dataset/rng.js';

describe('Rng', () => {
  it('is deterministic per (seed, index) and uniform enough', () => {
    const a = Rng.forIndex(1, 2);
    const b = Rng.forIndex(1, 2);
    const xs = Array.from({ length: 5 }, () => a.uint32());
    expect(Array.from({ length: 5 }, () => b.uint32())).toEqual(xs);
    expect(Rng.forIndex(1, 3).uint32()).not.toBe(Rng.forIndex(1, 2).uint32());
    expect(Rng.forIndex(2, 2).uint32()).not.toBe(Rng.forIndex(1, 2).uint32());
    const buckets = new Array(10).fill(0);
    const rng = Rng.forIndex(9, 9);
    for (let i = 0; i < 100_000; i++) {
      const f = rng.float();
      if (!(f >= 0 && f < 1)) throw new Error(`float() returned ${f}`);
      buckets[Math.floor(f * 10)]++;
    }
    for (const count of buckets) expect(Math.abs(count - 10_000)).toBeLessThan(500);
    const dice = new Array(6).fill(0);
    for (let i = 0; i < 60_000; i++) dice[rng.integer(6)]++;
    for (const count of dice) expect(Math.abs(count - 10_000)).toBeLessThan(500);
    expect(() => rng.integer(0)).toThrow(RangeError);
  });

  it('first draws of consecutive indices are not correlated', () => {
    let agree = 0;
    for (let i = 0; i < 10_000; i++)
      if (Rng.forIndex(0, i).uint32() >>> 31 === Rng.forIndex(0, i + 1).uint32() >>> 31) agree++;
    expect(Math.abs(agree - 5000)).toBeLessThan(300);
  });
});

describe('MixSchedule', () => {
  it('locate and positionOf are inverse, and every block has the exact proportions', () => {
    for (const weights of [[1], [1, 1], [3, 1, 2], [0.2, 0.3, 0.5], [1, 1e-3]]) {
      const schedule = new MixSchedule(weights);
      const counts = weights.map(() => 0);
      for (let p = 0; p < schedule.blockSize * 3; p++) {
        const [k, element] = schedule.locate(p);
        expect(element).toBe(counts[k]);
        counts[k]!++;
        expect(schedule.positionOf(k, element)).toBe(p);
      }
      for (const [k, count] of counts.entries()) expect(count).toBe(3 * schedule.counts[k]!);
    }
    expect(new MixSchedule([0.2, 0.3, 0.5]).counts).toEqual([2, 3, 5]);
    expect(new MixSchedule([6, 4]).counts).toEqual([3, 2]);
  });

  it('mixedLength stops at the first dataset to run out', () => {
    const schedule = new MixSchedule([1, 1]);
    expect(schedule.mixedLength([3, 10])).toBe(6);
    expect(schedule.mixedLength([10, 3])).toBe(7);
    expect(schedule.mixedLength([Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY])).toBe(
      Number.POSITIVE_INFINITY,
    );
  });
});
