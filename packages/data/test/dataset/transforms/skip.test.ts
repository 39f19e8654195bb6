import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// skip: src/dataset/transforms/skip.ts. Every case checks checkpoint and restore at each step.
describe('skip', () => {
  it('drops the first count elements', async () => {
    const ds = counting(12).skip(5);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), 9)).toEqual(range(12).slice(5));
    expect(await counting(3).skip(10).toArray()).toEqual([]);
    expect(await counting(3).skip(0).toArray()).toEqual([0, 1, 2]);
    expect(await counting(20).skip(3).take(4).skip(1).toArray()).toEqual([4, 5, 6]);
    expect(String(counting(3).skip(2))).toBe('Counting(3) -> Skip(2)');
    expect(() => counting(3).skip(-1)).toThrow(/Expected a non-negative integer for count but received -1/);
  });
});
