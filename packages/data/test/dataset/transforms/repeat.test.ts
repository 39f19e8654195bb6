import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { expectIteration } from '../../helpers/datasets.js';

// repeat: src/dataset/transforms/repeat.ts. Every case checks checkpoint and restore at each step.
describe('repeat', () => {
  it('repeat reads the dataset numEpochs times, or forever', async () => {
    const ds = MapDataset.source(['a', 'b', 'c']).repeat(3);
    expect(ds.length).toBe(9);
    await expectIteration(ds, ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
    const forever = MapDataset.source(['a', 'b']).repeat();
    expect(forever.length).toBe(Number.POSITIVE_INFINITY);
    expect(await forever.get(1_000_001)).toBe('b');
    const taken = await forever.toIterDataset().take(5).toArray();
    expect(taken).toEqual(['a', 'b', 'a', 'b', 'a']);
    expect(MapDataset.range(0).repeat().length).toBe(0);
  });
});
