import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting } from '../../helpers/datasets.js';

// pack: src/dataset/transforms/pack.ts. Every case checks checkpoint and restore at each step.
describe('pack', () => {
  /** Record x has `tokens` [10x, 10x + 1, ...] and `weights` [x, x, ...], of length lengths[x]. */
  const records = (lengths: number[]) =>
    counting(lengths.length).map((x) => ({
      tokens: Array.from({ length: lengths[x]! }, (_, i) => 10 * x + i),
      weights: new Float32Array(lengths[x]!).fill(x),
    }));

  it('packs first-fit into rows with segment ids and positions', async () => {
    // Lengths 3, 2, 4, 1, 3 into 2 bins of 5: [a b] [c d], then e overflows and opens the next group.
    const ds = records([3, 2, 4, 1, 3]).pack({ rowLength: 5, numBins: 2 });
    const rows = await assertCheckpointRoundTrip(() => ds.iterator(), 5);
    expect(rows).toEqual([
      {
        features: { tokens: [0, 1, 2, 10, 11], weights: [0, 0, 0, 1, 1] },
        segmentIds: [1, 1, 1, 2, 2],
        positions: [0, 1, 2, 0, 1],
      },
      {
        features: { tokens: [20, 21, 22, 23, 30], weights: [2, 2, 2, 2, 3] },
        segmentIds: [1, 1, 1, 1, 2],
        positions: [0, 1, 2, 3, 0],
      },
      {
        features: { tokens: [40, 41, 42, 0, 0], weights: [4, 4, 4, 0, 0] },
        segmentIds: [1, 1, 1, 0, 0],
        positions: [0, 1, 2, 0, 0],
      },
    ]);
    expect(String(ds)).toBe('Counting(5) -> Map -> Pack(rowLength=5, numBins=2)');
  });

  it('keeps every value once, cuts over-long records, and restores anywhere', async () => {
    const lengths = Array.from({ length: 40 }, (_, x) => ((x * 7) % 9) + 1);
    const ds = records(lengths).pack({ rowLength: 8, numBins: 3 });
    const rows = await assertCheckpointRoundTrip(() => ds.iterator(), 30);
    const rowsAll = await ds.toArray();
    expect(rows).toEqual(rowsAll.slice(0, 30));
    // Every record appears once, in one row, whole or cut to 8 values.
    const seen = rowsAll.flatMap((row) =>
      row.features.tokens.filter((_, i) => row.segmentIds[i]! > 0 && row.positions[i] === 0),
    );
    expect(seen.map((t) => t / 10).sort((a, b) => a - b)).toEqual(lengths.map((_, x) => x));
    const total = rowsAll.reduce((sum, row) => sum + row.segmentIds.filter((s) => s > 0).length, 0);
    expect(total).toBe(lengths.reduce((sum, n) => sum + Math.min(n, 8), 0));
    // One bin: rows in read order, a long record is cut.
    const single = await records([10, 2]).pack({ rowLength: 4 }).toArray();
    expect(single.map((row) => row.features.tokens)).toEqual([
      [0, 1, 2, 3],
      [10, 11, 0, 0],
    ]);
  });

  it('checks its arguments and records', async () => {
    expect(() => records([1]).pack({ rowLength: 0 })).toThrow(
      /Expected a positive integer for options.rowLength but received 0/,
    );
    const unequal = counting(2).map((x) => ({ a: [x, x], b: [x] }));
    await expect(unequal.pack({ rowLength: 4 }).toArray()).rejects.toThrow(
      /feature 'b' has 1 values but 'a' has 2/,
    );
  });
});
