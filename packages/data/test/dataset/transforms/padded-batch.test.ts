import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting } from '../../helpers/datasets.js';

// paddedBatch: src/dataset/transforms/padded-batch.ts. Every case checks checkpoint and restore at each step.
describe('paddedBatch', () => {
  // Element x is [x, x, ...] of length x % 4 + 1.
  const sequences = (n: number) => counting(n).map((x) => new Array<number>((x % 4) + 1).fill(x));
  const pad = (row: number[], length: number, value = 0) => [
    ...row,
    ...new Array<number>(length - row.length).fill(value),
  ];

  it('pads each batch to its longest sequence, or to paddedLength', async () => {
    const rows = Array.from({ length: 10 }, (_, x) => new Array<number>((x % 4) + 1).fill(x));
    const reference = (size: number, length?: number, value = 0) => {
      const out: number[][][] = [];
      for (let i = 0; i < rows.length; i += size) {
        const batch = rows.slice(i, i + size);
        const target = length ?? Math.max(...batch.map((r) => r.length));
        out.push(batch.map((r) => pad(r, target, value)));
      }
      return out;
    };
    const ds = sequences(10).paddedBatch(3);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), 6)).toEqual(reference(3));
    const fixed = sequences(10).paddedBatch(4, { paddedLength: 6, paddingValue: -1, dropRemainder: true });
    expect(await assertCheckpointRoundTrip(() => fixed.iterator(), 4)).toEqual(
      reference(4, 6, -1).slice(0, 2),
    );
    // Typed arrays are padded into number arrays.
    const typed = counting(2).map((x) => Int32Array.from({ length: x + 1 }, () => 7));
    expect(await typed.paddedBatch(2).toArray()).toEqual([
      [
        [7, 0],
        [7, 7],
      ],
    ]);
    expect(String(ds)).toBe('Counting(10) -> Map -> PaddedBatch(3)');
  });

  it('fails on a sequence longer than paddedLength and on bad options', async () => {
    await expect(sequences(8).paddedBatch(4, { paddedLength: 3 }).toArray()).rejects.toThrow(
      /row 3 of the batch has 4 values, more than the padded length 3/,
    );
    expect(() => sequences(3).paddedBatch(2, { paddedLength: 0 })).toThrow(
      /Expected a positive integer for options.paddedLength but received 0/,
    );
    expect(() => sequences(3).paddedBatch(2, { padding: 1 } as never)).toThrow(TypeError);
  });
});
