import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, expectIteration, range } from '../../helpers/datasets.js';

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

// IterDataset.repeat: RepeatIterator in the same file.
describe('IterDataset.repeat', () => {
  it('replays the parent numEpochs times, or forever, and ends on an empty parent', async () => {
    const ds = counting(4).repeat(3);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 14);
    expect(values).toEqual([...range(4), ...range(4), ...range(4)]);
    expect(await counting(3).repeat().take(8).toArray()).toEqual([0, 1, 2, 0, 1, 2, 0, 1]);
    expect(await counting(3).repeat(0).toArray()).toEqual([]);
    expect(await counting(0).repeat().toArray()).toEqual([]);
    // A window shuffle below a repeat replays its order; the epoch is in the state.
    const shuffled = counting(6).shuffle({ bufferSize: 3, seed: 2 }).repeat(2);
    const twice = await assertCheckpointRoundTrip(() => shuffled.iterator(), 13);
    expect(twice.slice(6)).toEqual(twice.slice(0, 6));
    const it = ds.iterator();
    for (let i = 0; i < 5; i++) await it.next();
    expect(it.getState()).toEqual({ parent: { next: 1 }, epoch: 1 });
    expect(String(counting(2).repeat())).toBe('Counting(2) -> Repeat(forever)');
    expect(() => counting(2).repeat(-1)).toThrow(/Expected a non-negative integer for numEpochs/);
  });
});
