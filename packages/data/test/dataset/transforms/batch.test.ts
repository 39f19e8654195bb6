import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { all, counting, expectIteration, range } from '../../helpers/datasets.js';

// batch: src/dataset/transforms/batch.ts. Every case checks checkpoint and restore at each step.
describe('batch', () => {
  it('batch groups consecutive elements, with and without the remainder', async () => {
    const reference = (n: number, size: number, drop: boolean) => {
      const out: number[][] = [];
      for (let i = 0; i < n; i += size)
        out.push(Array.from({ length: Math.min(size, n - i) }, (_, k) => i + k));
      return drop && n % size !== 0 ? out.slice(0, -1) : out;
    };
    for (const [n, size] of [
      [10, 3],
      [12, 4],
      [2, 5],
      [0, 3],
    ] as const) {
      for (const dropRemainder of [false, true]) {
        const ds = MapDataset.range(n).batch(size, { dropRemainder });
        const expected = reference(n, size, dropRemainder);
        expect(ds.length).toBe(expected.length);
        expect(await all(ds)).toEqual(expected);
        await expectIteration(ds, expected);
      }
    }
    // Holes are left out of a batch; an all-hole batch is a hole.
    const filtered = MapDataset.range(12)
      .filter((x) => x < 2 || x > 8)
      .batch(3);
    expect(await all(filtered)).toEqual([[0, 1], undefined, undefined, [9, 10, 11]]);
    // Batches over a source with getMany use it.
    const calls: number[][] = [];
    const source = {
      length: 7,
      get: (i: number) => i,
      getMany: (indices: readonly number[]) => {
        calls.push([...indices]);
        return indices.map((i) => i * 2);
      },
    };
    expect(await MapDataset.source(source).batch(4).get(1)).toEqual([8, 10, 12]);
    expect(calls).toEqual([[4, 5, 6]]);
  });

  it('batch, with and without the remainder', async () => {
    for (const dropRemainder of [false, true]) {
      const ds = counting(23).batch(5, { dropRemainder });
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), 7);
      const expected: number[][] = [];
      for (let i = 0; i < 23; i += 5) expected.push(range(23).slice(i, i + 5));
      expect(values).toEqual(dropRemainder ? expected.slice(0, 4) : expected);
    }
  });
});
