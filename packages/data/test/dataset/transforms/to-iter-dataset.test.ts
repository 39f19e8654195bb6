import { describe, expect, it } from 'vitest';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { delay } from '../../helpers/checkpoint.js';
import { expectIteration, SlowSource } from '../../helpers/datasets.js';

// MapDataset.toIterDataset: src/dataset/transforms/to-iter-dataset.ts. Every case checks checkpoint and restore at each step.
describe('MapDataset.toIterDataset', () => {
  it('toIterDataset reads ahead with bounded concurrency and returns elements in order', async () => {
    const source = new SlowSource(40);
    const ds = MapDataset.source(source);
    const values = await ds.toIterDataset({ threads: 3, prefetch: 6 }).toArray();
    expect(values).toEqual(Array.from({ length: 40 }, (_, i) => i * 10));
    expect(source.maxInFlight).toBe(3);
    expect(source.calls).toBe(40);
    // Read-ahead is bounded by prefetch even when the consumer stops.
    const bounded = new SlowSource(100);
    const it = MapDataset.source(bounded).toIterDataset({ threads: 8, prefetch: 4 }).iterator();
    await it.next();
    await delay(20);
    expect(bounded.calls).toBeLessThanOrEqual(1 + 4);
    expect(bounded.calls).toBeGreaterThanOrEqual(4);
    // prefetch 0 reads on demand only.
    const lazy = new SlowSource(10);
    const onDemand = MapDataset.source(lazy).toIterDataset({ threads: 4, prefetch: 0 }).iterator();
    await onDemand.next();
    await onDemand.next();
    await delay(10);
    expect(lazy.calls).toBe(2);
    expect(lazy.maxInFlight).toBe(1);
    await expectIteration(
      MapDataset.source(new SlowSource(30)),
      Array.from({ length: 30 }, (_, i) => i * 10),
      4,
      8,
    );
  });

  it('a failing get surfaces from next() and the position stays on it', async () => {
    let failures = 1;
    const ds = MapDataset.range(6).map(async (x) => {
      if (x === 3 && failures-- > 0) throw new Error('flaky read of 3');
      return x;
    });
    const it = ds.toIterDataset({ threads: 2, prefetch: 4 }).iterator();
    const got: number[] = [];
    for (let i = 0; i < 3; i++) got.push((await it.next()).value as number);
    await expect(it.next()).rejects.toThrow('flaky read of 3');
    expect(it.getState()).toEqual({ nextIndex: 3 });
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      got.push(r.value);
    }
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
  });
});
