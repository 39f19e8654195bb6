import { describe, expect, it } from 'vitest';
import { DatasetError } from '../../../src/dataset/errors.js';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { estimateBytes } from '../../../src/dataset/transforms/cache.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { CountingIterator, type ReadLog, range } from '../../helpers/datasets.js';

// cache: src/dataset/transforms/cache.ts. Every case checks checkpoint and restore at each step.
describe('cache', () => {
  const source = (n: number, log: ReadLog) =>
    IterDataset.fromIterator(() => new CountingIterator(n, { log }), `Counting(${n})`);

  it('reads the parent once and serves later passes from memory', async () => {
    const log: ReadLog = { reads: 0 };
    const cached = source(6, log).cache();
    expect(await cached.toArray()).toEqual(range(6));
    expect(log.reads).toBe(6);
    expect(await cached.repeat(3).toArray()).toEqual([...range(6), ...range(6), ...range(6)]);
    expect(log.reads).toBe(6);
    // After the first pass the state is the position only.
    const it = cached.iterator();
    await it.next();
    expect(it.getState()).toEqual({ parent: null, position: 1 });
    expect(String(cached)).toBe(`Counting(6) -> Cache(maxBytes=${2 ** 30})`);
  });

  it('checkpoints and restores during and after the first pass', async () => {
    const log: ReadLog = { reads: 0 };
    // A fresh pipeline per iterator, as in a new process: its cache starts empty.
    const values = await assertCheckpointRoundTrip(() => source(5, log).cache().repeat(3).iterator(), 17);
    expect(values).toEqual([...range(5), ...range(5), ...range(5)]);
    // A position-only state restored into an empty cache refills it from the start, once.
    log.reads = 0;
    const it = source(5, log).cache().iterator();
    it.setState({ parent: null, position: 3 });
    expect(await it.next()).toEqual({ done: false, value: 3 });
    expect(await it.next()).toEqual({ done: false, value: 4 });
    expect((await it.next()).done).toBe(true);
    expect(log.reads).toBe(5);
  });

  it('fails past maxBytes with a clear error', async () => {
    const log: ReadLog = { reads: 0 };
    const small = source(10, log).cache({ maxBytes: 40 });
    const error = await small.toArray().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).code).toBe('ERR_CACHE_FULL');
    expect((error as Error).message).toMatch(
      /element 5 brings the cache to about 48 bytes, over maxBytes=40/,
    );
    expect(() => source(1, log).cache({ maxBytes: 0 })).toThrow(
      /Expected a positive integer for options.maxBytes/,
    );
    expect(estimateBytes({ ab: [1, 'xy'], b: new Float64Array(4) })).toBe(8 + 4 + 8 + 8 + 8 + 4 + 8 + 2 + 32);
  });
});
