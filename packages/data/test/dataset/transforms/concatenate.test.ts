import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { all, expectIteration } from '../../helpers/datasets.js';

// concatenate: src/dataset/transforms/concatenate.ts. Every case checks checkpoint and restore at each step.
describe('concatenate', () => {
  it('concatenate puts datasets one after the other', async () => {
    const ds = MapDataset.concatenate([MapDataset.range(3), MapDataset.range(0), MapDataset.range(10, 14)]);
    const expected = [0, 1, 2, 10, 11, 12, 13];
    expect(ds.length).toBe(7);
    expect(await all(ds)).toEqual(expected);
    await expectIteration(ds, expected);
    expect(await ds.repeat(2).get(7 + 4)).toBe(11);
    const endless = MapDataset.concatenate([MapDataset.range(2), MapDataset.range(5, 7).repeat()]);
    expect(await endless.toIterDataset().take(6).toArray()).toEqual([0, 1, 5, 6, 5, 6]);
    expect(() => MapDataset.concatenate([MapDataset.range(2).repeat(), MapDataset.range(2)])).toThrow(
      new RangeError('Expected a dataset of finite length for datasets[0].length but received Infinity'),
    );
  });
});
