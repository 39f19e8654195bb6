import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// take: src/dataset/transforms/take.ts. Every case checks checkpoint and restore at each step.
describe('take', () => {
  it('take', async () => {
    const ds = counting(20).take(7);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), 9)).toEqual(range(7));
    expect(await counting(3).take(10).toArray()).toEqual([0, 1, 2]);
    expect(await counting(3).take(0).toArray()).toEqual([]);
  });
});
