import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { ArrayDataSource } from '../../../src/dataset/sources/array-data-source.js';
import { RangeDataSource } from '../../../src/dataset/sources/range-data-source.js';
import { all, expectIteration, range } from '../../helpers/datasets.js';

// MapDataset.source: src/dataset/transforms/source.ts. Every case checks checkpoint and restore at each step.
describe('MapDataset.source', () => {
  it('RangeDataSource mirrors range()', () => {
    const cases: Array<[number, number, number]> = [
      [0, 10, 1],
      [3, 17, 4],
      [10, 0, -3],
      [5, 5, 1],
      [5, 0, 1],
    ];
    for (const [start, stop, step] of cases) {
      const expected: number[] = [];
      for (let x = start; step > 0 ? x < stop : x > stop; x += step) expected.push(x);
      const source = new RangeDataSource(start, stop, step);
      expect(source.length).toBe(expected.length);
      expect(Array.from({ length: source.length }, (_, i) => source.get(i))).toEqual(expected);
    }
    expect(String(new RangeDataSource(0, 10, 2))).toBe('RangeDataSource(0, 10, 2)');
    expect(new RangeDataSource(1, 4).describe()).toEqual({ type: 'range', start: 1, stop: 4, step: 1 });
    expect(() => new RangeDataSource(0, 10, 0)).toThrow(
      new RangeError('Expected a non-zero integer for step but received 0'),
    );
  });

  it('ArrayDataSource reads arrays and array-likes', async () => {
    const typed = new Float32Array([1.5, 2.5, 3.5]);
    expect(await all(MapDataset.source(new ArrayDataSource(typed)))).toEqual([1.5, 2.5, 3.5]);
    expect(await all(MapDataset.source(['a', 'b']))).toEqual(['a', 'b']);
    expect(await all(MapDataset.source({ length: 2, 0: 'x', 1: 'y' }))).toEqual(['x', 'y']);
    expect(() => new ArrayDataSource(42 as unknown as ArrayLike<number>)).toThrow(
      new TypeError('Expected an array or array-like for items but received 42'),
    );
  });

  it('source iterates its elements and resumes exactly', async () => {
    await expectIteration(
      MapDataset.source(new RangeDataSource(3, 40, 3)),
      range(13).map((i) => 3 + 3 * i),
    );
    await expectIteration(MapDataset.source(new ArrayDataSource(['a', 'b', 'c', 'd'])), ['a', 'b', 'c', 'd']);
  });
});
