import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import { all, expectIteration } from '../helpers/datasets.js';

// What every MapDataset shares (sharding, descriptions, argument checks, immutability); each
// transform has its own file in transforms/.
describe('MapDataset', () => {
  it('shard splits contiguously, sizes differing by at most one, or equal with dropRemainder', async () => {
    const n = 23;
    for (const count of [1, 2, 4, 5, 23, 30]) {
      const parts = await Promise.all(
        Array.from({ length: count }, (_, index) => all(MapDataset.range(n).shard({ index, count }))),
      );
      expect(parts.flat()).toEqual(Array.from({ length: n }, (_, i) => i));
      const sizes = parts.map((p) => p.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      const dropped = await Promise.all(
        Array.from({ length: count }, (_, index) =>
          all(MapDataset.range(n).shard({ index, count, dropRemainder: true })),
        ),
      );
      expect(dropped.flat()).toEqual(Array.from({ length: Math.floor(n / count) * count }, (_, i) => i));
    }
    // Each shard iterates and checkpoints like any dataset.
    await expectIteration(MapDataset.range(n).shard({ index: 2, count: 4 }), [12, 13, 14, 15, 16, 17]);
    expect(() => MapDataset.range(5).shard({ index: 3, count: 3 })).toThrow(
      new RangeError('Expected an integer in [0, 2] for options.index but received 3'),
    );
  });

  it('describes its chain and validates arguments', async () => {
    const ds = MapDataset.range(100)
      .shuffle(7)
      .map((x) => x)
      .batch(32);
    expect(String(ds)).toBe('RangeDataSource(0, 100, 1) -> Shuffle(seed=7) -> Map -> Batch(32)');
    const it = ds.toIterDataset({ threads: 2, prefetch: 4 }).prefetch(8);
    expect(String(it)).toBe(
      'RangeDataSource(0, 100, 1) -> Shuffle(seed=7) -> Map -> Batch(32) -> ToIterDataset(threads=2, prefetch=4) -> Prefetch(8)',
    );
    expect(String(it.iterator())).toBe(String(it));
    await expect(ds.get(-1)).rejects.toThrow(
      new RangeError('Expected a non-negative integer for index but received -1'),
    );
    await expect(MapDataset.range(0).get(0)).rejects.toThrow(RangeError);
    expect(() => ds.batch(0)).toThrow(new RangeError('Expected a positive integer for size but received 0'));
    expect(() => ds.map(5 as unknown as (x: number[]) => number)).toThrow(
      new TypeError('Expected a function for fn but received 5'),
    );
    expect(() => ds.toIterDataset({ threads: 0 })).toThrow(
      new RangeError('Expected a positive integer for options.threads but received 0'),
    );
  });

  it('is immutable: operations return new datasets and leave their parent alone', async () => {
    const base = MapDataset.range(5);
    const doubled = base.map((x) => x * 2);
    base.filter(() => false);
    expect(await all(base)).toEqual([0, 1, 2, 3, 4]);
    expect(await all(doubled)).toEqual([0, 2, 4, 6, 8]);
  });
});
