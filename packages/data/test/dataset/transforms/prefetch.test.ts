import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip, delay } from '../../helpers/checkpoint.js';
import { CountingIterator, type ReadLog } from '../../helpers/datasets.js';

/** A slow sequential source that records how far it has been read. */
const source = (end: number, log: ReadLog) =>
  new CountingIterator(end, { log, extraDelay: 1, name: 'Source' });

describe('IterDataset.prefetch', () => {
  it('returns the parent sequence and resumes exactly across its buffer', async () => {
    for (const size of [1, 3, 8]) {
      const log = { reads: 0 };
      const ds = IterDataset.fromIterator(() => source(25, log)).prefetch(size);
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), 28, { seed: size });
      expect(values).toEqual(Array.from({ length: 25 }, (_, i) => i));
    }
  });

  it('its state is the position of the next element returned, not of the read-ahead', async () => {
    const log = { reads: 0 };
    const it = IterDataset.fromIterator(() => source(50, log))
      .prefetch(6)
      .iterator();
    expect(it.getState()).toEqual({ parent: { next: 0 } });
    expect((await it.next()).value).toBe(0);
    await delay(40);
    // The buffer filled up behind the consumer...
    expect(log.reads).toBe(7);
    // ...but the state only covers what was returned.
    expect(it.getState()).toEqual({ parent: { next: 1 } });
    expect((await it.next()).value).toBe(1);
    expect(it.getState()).toEqual({ parent: { next: 2 } });
    // Restoring while reads run in the background discards them.
    it.setState({ parent: { next: 40 } });
    expect(it.getState()).toEqual({ parent: { next: 40 } });
    const rest: number[] = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    expect(rest).toEqual(Array.from({ length: 10 }, (_, i) => 40 + i));
  });

  it('restores right after next() while the parent is mid-read', async () => {
    const ds = IterDataset.fromIterator(() => source(30, { reads: 0 })).prefetch(4);
    const it = ds.iterator();
    await it.next();
    // The background fill is certainly inside the parent's next() now.
    it.setState({ parent: { next: 10 } });
    it.setState({ parent: { next: 20 } });
    expect((await it.next()).value).toBe(20);
    expect((await it.next()).value).toBe(21);
  });

  it('reports a failed read once, at its position, then goes on', async () => {
    const log = { reads: 0, failAt: 4 };
    const it = IterDataset.fromIterator(() => source(8, log))
      .prefetch(3)
      .iterator();
    const got: number[] = [];
    for (let i = 0; i < 4; i++) got.push((await it.next()).value as number);
    await expect(it.next()).rejects.toThrow('read 4 failed');
    expect(it.getState()).toEqual({ parent: { next: 4 } });
    for (let r = await it.next(); !r.done; r = await it.next()) got.push(r.value);
    expect(got).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
  });

  it('over a MapDataset read-ahead and an interleave, resumption stays exact', async () => {
    const ds = MapDataset.range(6)
      .toIterDataset({ threads: 2, prefetch: 2 })
      .interleave(
        (f) =>
          MapDataset.range(f * 100, f * 100 + 1 + (f % 3))
            .map(async (x) => {
              await delay(x % 2);
              return x;
            })
            .toIterDataset({ threads: 2, prefetch: 3 }),
        2,
      )
      .prefetch(4);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 14);
    expect([...values].sort((a, b) => a - b)).toEqual([
      0, 100, 101, 200, 201, 202, 300, 400, 401, 500, 501, 502,
    ]);
  });
});
