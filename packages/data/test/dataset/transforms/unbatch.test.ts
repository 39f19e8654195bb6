import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// unbatch: src/dataset/transforms/unbatch.ts. Every case checks checkpoint and restore at each step.
describe('unbatch', () => {
  it('returns the items of each batch one by one', async () => {
    const ds = counting(17).batch(5).unbatch();
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), 19)).toEqual(range(17));
    expect(String(ds)).toBe('Counting(17) -> Batch(5) -> Unbatch');
    // Typed arrays and empty batches.
    const typed = counting(4).map((x) => Float32Array.from({ length: x }, (_, k) => x + k / 10));
    expect(await typed.unbatch().toArray()).toEqual([
      1, 2, 2.0999999046325684, 3, 3.0999999046325684, 3.200000047683716,
    ]);
  });
});
