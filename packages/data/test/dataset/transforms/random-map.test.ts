import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { Rng } from '../../../src/dataset/rng.js';
import { all, expectIteration } from '../../helpers/datasets.js';

// random-map: src/dataset/transforms/random-map.ts. Every case checks checkpoint and restore at each step.
describe('random-map', () => {
  it('randomMap gives each element randomness from (seed, index) only', async () => {
    const ds = MapDataset.range(30).randomMap((x, rng) => x + rng.float(), 7);
    const expected = Array.from({ length: 30 }, (_, i) => i + Rng.forIndex(7, i).float());
    expect(await all(ds)).toEqual(expected);
    // Order of computation does not matter.
    expect(await ds.get(17)).toBe(expected[17]);
    expect(await ds.get(17)).toBe(expected[17]);
    // Another seed gives other values; a later epoch gets fresh randomness.
    expect(
      await MapDataset.range(30)
        .randomMap((x, rng) => x + rng.float(), 8)
        .get(3),
    ).not.toBe(expected[3]);
    const repeated = MapDataset.range(30)
      .randomMap((x, rng) => x + rng.float(), 7)
      .repeat(2);
    expect(await repeated.get(30 + 3)).not.toBe(expected[3]);
    expect(Math.floor((await repeated.get(33))!)).toBe(3);
    await expectIteration(ds, expected);
  });
});
