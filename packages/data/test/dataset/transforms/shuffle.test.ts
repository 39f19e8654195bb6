import { describe, expect, it } from 'vitest';
import { epochSeed, indexShuffle } from '../../../src/dataset/index-shuffle.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { all, expectIteration } from '../../helpers/datasets.js';

// shuffle: src/dataset/transforms/shuffle.ts. Every case checks checkpoint and restore at each step.
describe('shuffle', () => {
  it('shuffle is a permutation per epoch, and a new one every epoch under repeat', async () => {
    const n = 50;
    const ds = MapDataset.range(n).shuffle(3);
    const epoch0 = await all(ds);
    const expected0 = Array.from({ length: n }, (_, i) => indexShuffle(i, n, epochSeed(3, 0)));
    expect(epoch0).toEqual(expected0);
    expect([...epoch0].sort((a, b) => a! - b!)).toEqual(Array.from({ length: n }, (_, i) => i));
    const repeated = MapDataset.range(n).shuffle(3).repeat(3);
    expect(repeated.length).toBe(3 * n);
    const epochs = await all(repeated);
    const expected = [0, 1, 2].flatMap((e) =>
      Array.from({ length: n }, (_, i) => indexShuffle(i, n, epochSeed(3, e))),
    );
    expect(epochs).toEqual(expected);
    expect(epochs.slice(n, 2 * n)).not.toEqual(epochs.slice(0, n));
    await expectIteration(repeated, expected);
    // Epoch e of seed s is not epoch e - 1 of seed s + 1.
    const other = await all(MapDataset.range(n).shuffle(4).repeat(2), 2 * n);
    expect(other.slice(0, n)).not.toEqual(epochs.slice(n, 2 * n));
    expect(() => MapDataset.range(3).repeat().shuffle(1)).toThrow(RangeError);
  });
});
