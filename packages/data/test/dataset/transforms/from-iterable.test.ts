import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { assertCheckpointRoundTrip, delay } from '../../helpers/checkpoint.js';
import { counting, range } from '../../helpers/datasets.js';

// IterDataset.fromIterable / fromIterator: src/dataset/transforms/from-iterable.ts. Every case checks checkpoint and restore at each step.
describe('IterDataset.fromIterable / fromIterator', () => {
  it('fromIterable replays a generator factory exactly', async () => {
    async function* gen() {
      for (let i = 0; i < 15; i++) {
        await delay(i % 2);
        yield `r${i}`;
      }
    }
    const ds = IterDataset.fromIterable(gen, 'Records');
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 18);
    expect(values).toEqual(range(15).map((i) => `r${i}`));
    expect(await IterDataset.fromIterable(() => [1, 2, 3]).toArray()).toEqual([1, 2, 3]);
    expect(String(ds.map((x) => x))).toBe('Records -> Map');
  });

  it('fromIterator uses the iterator own state', async () => {
    const values = await assertCheckpointRoundTrip(() => counting(12).iterator(), 14);
    expect(values).toEqual(range(12));
  });
});
