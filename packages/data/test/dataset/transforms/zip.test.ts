import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// zip: src/dataset/transforms/zip.ts. Every case checks checkpoint and restore at each step.
describe('zip', () => {
  it('pairs elements in step and ends with the shortest dataset', async () => {
    const letters = IterDataset.fromIterable(() => [...'abcdefg'], 'Letters');
    const ds = IterDataset.zip<[number, string, number]>([
      counting(10),
      letters,
      counting(9).map((x) => x * 10),
    ]);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 9);
    expect(values).toEqual(range(7).map((i) => [i, 'abcdefg'[i], i * 10]));
    expect(String(ds)).toBe('Zip(Counting(10), Letters, Counting(9) -> Map)');
    expect(await IterDataset.zip([counting(3), counting(0)]).toArray()).toEqual([]);
    // Parents that are datasets of one kind give a typed tuple.
    const pairs: [number, number][] = await IterDataset.zip<[number, number]>([
      counting(2),
      counting(2),
    ]).toArray();
    expect(pairs).toEqual([
      [0, 0],
      [1, 1],
    ]);
  });

  it('checks its arguments and state', () => {
    expect(() => IterDataset.zip([])).toThrow(/Expected a non-empty array for datasets/);
    const it = IterDataset.zip([counting(3), counting(3)]).iterator();
    expect(() => it.setState({ parents: [{ next: 0 }] })).toThrow(/array of length 2/);
  });
});
