/** Prefetcher.setReadAhead: the read-ahead changed while reading, as the dataset tuner does. */
import { describe, expect, it } from 'vitest';
import { Prefetcher } from '../src/index.js';
import { writeTestFile } from './helpers/prefetch-files.js';
import { mulberry32 } from './helpers/random-records.js';

describe('Prefetcher.setReadAhead', () => {
  it('clamps to the threads and bound given to create, and reports them in stats', async () => {
    const p = Prefetcher.create({ threads: 3, maxBufferedBytes: 1 << 20 });
    try {
      expect(p.stats).toMatchObject({ threads: 3, activeThreads: 3, maxBufferedBytes: 1 << 20 });
      p.setReadAhead({ activeThreads: 1, maxBufferedBytes: 4096 });
      expect(p.stats).toMatchObject({ threads: 3, activeThreads: 1, maxBufferedBytes: 4096 });
      // The two above the active count park (they were idle: at once, but on their own threads).
      await expect.poll(() => p.stats.parkedThreads, { timeout: 10_000 }).toBe(2);
      p.setReadAhead({ activeThreads: 64, maxBufferedBytes: 1 << 30 });
      expect(p.stats).toMatchObject({ activeThreads: 3, maxBufferedBytes: 1 << 20 });
    } finally {
      p.close();
    }
  });

  it('rejects values that are not positive integers, naming the argument', () => {
    const p = Prefetcher.create({ threads: 1 });
    try {
      expect(() => p.setReadAhead({ activeThreads: 0, maxBufferedBytes: 1 })).toThrow(
        /settings\.activeThreads/,
      );
      expect(() => p.setReadAhead({ activeThreads: 1, maxBufferedBytes: 0.5 })).toThrow(
        /settings\.maxBufferedBytes/,
      );
    } finally {
      p.close();
    }
    // After close it changes nothing and does not throw.
    p.setReadAhead({ activeThreads: 1, maxBufferedBytes: 1 });
  });

  it('changing threads and bound at every few batches never changes the records or their order', async () => {
    const file = await writeTestFile('tuned.rio', 'gzip', 6000, 400, 21, 4096);
    const rand = mulberry32(5);
    await using p = Prefetcher.create({ threads: 4, batchSize: 16, maxBufferedBytes: 256 * 1024 });
    p.enqueue({ path: file.path, start: 0, count: 6000 });
    p.end();
    const got: Uint8Array[] = [];
    let batches = 0;
    for await (const batch of p) {
      if (batches++ % 3 === 0) {
        p.setReadAhead({
          activeThreads: 1 + Math.floor(rand() * 4),
          maxBufferedBytes: 1 + Math.floor(rand() * 256 * 1024),
        });
      }
      for (const record of batch) got.push(record.slice());
    }
    expect(got.length).toBe(file.records.length);
    expect(got.every((r, i) => Buffer.compare(r, file.records[i] as Uint8Array) === 0)).toBe(true);
    expect(p.stats.decodeNanoseconds).toBeGreaterThan(0);
    // Every delivered byte was decoded and counted (a piece may hold a few bytes more).
    const delivered = got.reduce((sum, r) => sum + r.byteLength, 0);
    expect(p.stats.decodedBytes).toBeGreaterThan(delivered);
  });
});
