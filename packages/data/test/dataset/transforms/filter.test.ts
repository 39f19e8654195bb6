import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { all, counting, expectIteration, range } from '../../helpers/datasets.js';

// filter: src/dataset/transforms/filter.ts. Every case checks checkpoint and restore at each step.
describe('filter', () => {
  it('filter leaves holes in random access and iteration skips them', async () => {
    const ds = MapDataset.range(25).filter((x) => x % 3 === 0);
    expect(ds.length).toBe(25);
    expect(await all(ds)).toEqual(Array.from({ length: 25 }, (_, i) => (i % 3 === 0 ? i : undefined)));
    await expectIteration(
      ds,
      Array.from({ length: 25 }, (_, i) => i).filter((x) => x % 3 === 0),
    );
    // map after filter keeps the holes and never sees them.
    const seen: number[] = [];
    const mapped = ds.map((x) => {
      seen.push(x);
      return -x;
    });
    expect(await mapped.get(4)).toBeUndefined();
    expect(await mapped.get(6)).toBe(-6);
    expect(seen).toEqual([6]);
  });

  it('filter', async () => {
    const ds = counting(30).filter((x) => x % 4 === 1);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 10);
    expect(values).toEqual(range(30).filter((x) => x % 4 === 1));
  });
});
