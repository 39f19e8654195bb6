import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { all, expectIteration } from '../../helpers/datasets.js';

// slice: src/dataset/transforms/slice.ts. Every case checks checkpoint and restore at each step.
describe('slice', () => {
  it('slice takes start, stop and step like a Python slice with non-negative bounds', async () => {
    const base = Array.from({ length: 20 }, (_, i) => i * 3);
    const ds = MapDataset.source(base);
    for (const [start, stop, step] of [
      [0, 20, 1],
      [2, 15, 4],
      [5, 100, 2],
      [19, 20, 5],
      [10, 5, 1],
    ] as const) {
      const expected: number[] = [];
      for (let i = start; i < Math.min(stop, 20); i += step) expected.push(base[i]!);
      const sliced = ds.slice(start, stop, step);
      expect(await all(sliced)).toEqual(expected);
      await expectIteration(sliced, expected);
    }
    expect(await all(ds.slice(15))).toEqual(base.slice(15));
  });
});
