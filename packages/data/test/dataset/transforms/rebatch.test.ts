import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// rebatch: src/dataset/transforms/rebatch.ts. Every case checks checkpoint and restore at each step.
describe('rebatch', () => {
  it('regroups batches into batches of another size, across batch boundaries', async () => {
    const chunks = (values: number[], size: number) => {
      const out: number[][] = [];
      for (let i = 0; i < values.length; i += size) out.push(values.slice(i, i + size));
      return out;
    };
    for (const dropRemainder of [false, true]) {
      const ds = counting(23).batch(5).rebatch(3, { dropRemainder });
      const expected = chunks(range(23), 3);
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), 10);
      expect(values).toEqual(dropRemainder ? expected.slice(0, -1) : expected);
    }
    expect(await counting(6).batch(2).rebatch(4).toArray()).toEqual([range(4), [4, 5]]);
    expect(String(counting(6).batch(2).rebatch(4))).toBe('Counting(6) -> Batch(2) -> Rebatch(4)');
    expect(() => counting(6).batch(2).rebatch(0)).toThrow(/Expected a positive integer for size/);
  });
});
