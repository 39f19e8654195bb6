import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip, delay } from '../../helpers/checkpoint.js';
import { all, counting, expectIteration, range } from '../../helpers/datasets.js';

// map: src/dataset/transforms/map.ts. Every case checks checkpoint and restore at each step.
describe('map', () => {
  it('map applies the function to every element (sync and async)', async () => {
    const ds = MapDataset.range(20).map((x) => x * x);
    const expected = Array.from({ length: 20 }, (_, i) => i * i);
    expect(await all(ds)).toEqual(expected);
    await expectIteration(ds, expected);
    const asyncDs = MapDataset.range(20).map(async (x) => {
      await delay(x % 3);
      return `v${x}`;
    });
    await expectIteration(
      asyncDs,
      expected.map((_, i) => `v${i}`),
    );
  });

  it('map', async () => {
    const ds = counting(20).map(async (x) => ({ x, y: x * 2 }));
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 22);
    expect(values).toEqual(range(20).map((x) => ({ x, y: x * 2 })));
  });
});
