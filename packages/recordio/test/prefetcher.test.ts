import { describe, expect, it } from 'vitest';
import {
  type PrefetchedBatch,
  Prefetcher,
  type PrefetcherOptions,
  PrefetchRangeError,
  RecordIOError,
} from '../src/index.js';
import { GOLDEN_DIR } from './helpers/golden.js';
import { sequential, type TestFile, writeTestFile } from './helpers/prefetch-files.js';
import { mulberry32 } from './helpers/random-records.js';

interface Range {
  readonly path: string;
  readonly start: number;
  readonly count: number;
}

/** Everything a prefetcher delivers: batches, and errors (iteration goes on after each). */
async function drain(p: Prefetcher): Promise<{ batches: PrefetchedBatch[]; errors: PrefetchRangeError[] }> {
  const batches: PrefetchedBatch[] = [];
  const errors: PrefetchRangeError[] = [];
  for (;;) {
    try {
      const r = await p.next();
      if (r.done) break;
      batches.push(r.value);
    } catch (error) {
      if (!(error instanceof PrefetchRangeError)) throw error;
      errors.push(error);
    }
  }
  return { batches, errors };
}

function randomRanges(files: readonly TestFile[], n: number, seed: number): Range[] {
  const rand = mulberry32(seed);
  const ranges: Range[] = [];
  for (let i = 0; i < n; i++) {
    const f = files[Math.floor(rand() * files.length)] as TestFile;
    const start = Math.floor(rand() * (f.records.length + 1));
    const count = Math.floor(rand() * (f.records.length - start + 1));
    ranges.push({ path: f.path, start, count });
  }
  return ranges;
}

async function run(options: PrefetcherOptions, ranges: readonly Range[]) {
  await using p = Prefetcher.create(options);
  for (const r of ranges) p.enqueue(r);
  p.end();
  const out = await drain(p);
  return { ...out, stats: p.stats };
}

describe('Prefetcher', () => {
  it('delivers random lists of ranges in order, equal to sequential reads, for 0/1/2/4 threads', async () => {
    const files = [
      await writeTestFile('none.rio', 'none', 1500, 300, 1, 4096),
      await writeTestFile('snappy.rio', 'snappy', 1200, 400, 2),
      await writeTestFile('gzip.rio', 'gzip', 1000, 200, 3, 2048),
    ];
    for (const seed of [11, 12]) {
      const ranges = randomRanges(files, 10, seed);
      const want: string[] = [];
      for (const [id, r] of ranges.entries()) {
        const records = await sequential(r.path, r.start, r.count);
        records.forEach((rec, i) => {
          want.push(`${id}#${r.start + i}=${Buffer.from(rec).toString()}`);
        });
      }
      for (const batchSize of [1, 7, 64]) {
        let shapes: string[] | undefined;
        for (const threads of [0, 1, 2, 4]) {
          const { batches, errors } = await run({ threads, batchSize, maxBufferedBytes: 128 * 1024 }, ranges);
          expect(errors).toEqual([]);
          const got: string[] = [];
          for (const b of batches) {
            expect(b.length).toBeLessThanOrEqual(batchSize);
            expect(b.offset).toBe(b.firstRecord - b.range.start);
            expect(ranges[b.range.id]).toEqual({
              path: b.range.path,
              start: b.range.start,
              count: b.range.count,
            });
            for (let i = 0; i < b.length; i++) {
              got.push(`${b.range.id}#${b.firstRecord + i}=${Buffer.from(b.get(i)).toString()}`);
            }
          }
          expect(got).toEqual(want);
          // The same batches whatever the number of threads.
          const shape = batches.map(
            (b) => `${b.range.id}@${b.firstRecord}+${b.length}${b.rangeDone ? '!' : ''}`,
          );
          shapes ??= shape;
          expect(shape).toEqual(shapes);
          // Every range ends with exactly one batch marked rangeDone.
          expect(batches.filter((b) => b.rangeDone).length).toBe(ranges.length);
        }
      }
    }
  });

  it('hands batches over without a copy: data views the native buffer, bounds index it', async () => {
    const f = await writeTestFile('view.rio', 'snappy', 300, 100, 4);
    const { batches } = await run({ threads: 2, batchSize: 100 }, [{ path: f.path, start: 0, count: 300 }]);
    expect(batches.map((b) => b.length)).toEqual([100, 100, 100]);
    const b = batches[1] as PrefetchedBatch;
    expect(b.bounds.length).toBe(200);
    expect(b.get(0).buffer).toBe(b.data.buffer);
    expect(Buffer.from(b.get(5)).toString()).toBe(Buffer.from(f.records[105] as Uint8Array).toString());
  });

  it('assembles later batches into the memory of released ones; kept batches are never overwritten', async () => {
    for (const compressor of ['none', 'gzip'] as const) {
      const f = await writeTestFile(`recycle-${compressor}.rio`, compressor, 3000, 300, 14);
      for (const threads of [0, 2]) {
        await using p = Prefetcher.create({ threads, batchSize: 64, maxBufferedBatches: 4 });
        for (let start = 0; start < 3000; start += 500) p.enqueue({ path: f.path, start, count: 500 });
        p.end();
        const kept: PrefetchedBatch[] = [];
        const released = new Set<ArrayBufferLike>();
        const keptBuffers = new Set<ArrayBufferLike>();
        let inReleasedBuffers = 0;
        let next = 0;
        for await (const batch of p) {
          expect(batch.firstRecord).toBe(next);
          for (let i = 0; i < batch.length; i++) {
            expect(Buffer.compare(batch.get(i), f.records[next + i] as Uint8Array)).toBe(0);
          }
          next += batch.length;
          const buffer = batch.data.buffer;
          // A batch assembled into a released batch's block comes in that batch's ArrayBuffer (no
          // new ArrayBuffer, whose bytes V8 would count towards its next full collection).
          if (released.has(buffer)) inReleasedBuffers++;
          expect(keptBuffers.has(buffer)).toBe(false);
          // Every fifth batch is kept: the others are released and their memory reused.
          if (kept.length * 5 < next / 64) {
            kept.push(batch);
            keptBuffers.add(buffer);
          } else {
            released.add(buffer);
            batch.release();
          }
        }
        expect(next).toBe(3000);
        expect(p.stats.batchesRecycled).toBeGreaterThan(10);
        expect(inReleasedBuffers).toBeGreaterThan(10);
        for (const batch of kept) {
          for (let i = 0; i < batch.length; i++) {
            expect(Buffer.compare(batch.get(i), f.records[batch.firstRecord + i] as Uint8Array)).toBe(0);
          }
        }
      }
    }
  });

  it('cuts batches at maxBatchBytes', async () => {
    const f = await writeTestFile('bytes.rio', 'none', 500, 300, 5);
    const { batches } = await run({ threads: 2, batchSize: 1000, maxBatchBytes: 2000 }, [
      { path: f.path, start: 0, count: 500 },
    ]);
    expect(batches.reduce((n, b) => n + b.length, 0)).toBe(500);
    for (const b of batches) if (b.length > 1) expect(b.totalBytes).toBeLessThanOrEqual(2000);
  });

  it('an error in one range loses none of the others, and names the range and position', async () => {
    const good = await writeTestFile('good.rio', 'gzip', 800, 200, 6);
    const ranges: Range[] = [
      { path: good.path, start: 0, count: 400 },
      { path: `${GOLDEN_DIR}bad-crc-none-64k.rio`, start: 0, count: 8192 },
      { path: good.path, start: 400, count: 400 },
      { path: `${GOLDEN_DIR}truncated-gzip-64k.rio`, start: 7000, count: 1192 },
      { path: `${GOLDEN_DIR}no-such-file.rio`, start: 0, count: 1 },
      { path: good.path, start: 790, count: 20 },
      { path: good.path, start: 0, count: 800 },
    ];
    for (const threads of [0, 1, 2, 4]) {
      const { batches, errors } = await run({ threads, batchSize: 64 }, ranges);
      expect(errors.map((e) => [e.range.id, e.code])).toEqual([
        [1, 'CHECKSUM'],
        [3, 'TRUNCATED'],
        [4, 'IO'],
        [5, 'OUT_OF_RANGE'],
      ]);
      const [crc, truncated] = errors as [PrefetchRangeError, PrefetchRangeError];
      expect(crc).toBeInstanceOf(RecordIOError);
      expect(crc.path).toBe(`${GOLDEN_DIR}bad-crc-none-64k.rio`);
      expect(crc.chunk).toBeTypeOf('number');
      expect(crc.position).toBe(0);
      expect(crc.undelivered).toBe(8192);
      expect(crc.message).toMatch(/range 1: records \[0, 8192\)/);
      // The records of the truncated file before the cut were delivered, then the error says where.
      expect(truncated.position).toBe(7673 - 7000);
      expect(batches.filter((b) => b.range.id === 3).reduce((n, b) => n + b.length, 0)).toBe(673);
      for (const id of [0, 2, 6]) {
        const r = ranges[id] as Range;
        const mine = batches.filter((b) => b.range.id === id);
        expect(mine.reduce((n, b) => n + b.length, 0)).toBe(r.count);
        expect(Buffer.from(mine.at(-1)?.get((mine.at(-1)?.length ?? 1) - 1) ?? []).toString()).toBe(
          Buffer.from(good.records[r.start + r.count - 1] as Uint8Array).toString(),
        );
      }
    }
  });

  it("skips corrupt chunks with onCorruptChunk: 'skip' and lists them", async () => {
    const { batches, errors } = await run({ threads: 2, batchSize: 100_000, onCorruptChunk: 'skip' }, [
      { path: `${GOLDEN_DIR}bad-crc-none-64k.rio`, start: 0, count: 8192 },
    ]);
    expect(errors).toEqual([]);
    const skipped = batches.flatMap((b) => [...b.skipped]);
    expect(skipped.length).toBeGreaterThan(0);
    expect(skipped.every((e) => e.code === 'CHECKSUM')).toBe(true);
    const delivered = batches.reduce((n, b) => n + b.length, 0);
    expect(delivered + skipped.reduce((n, e) => n + (e.records ?? 0), 0)).toBe(8192);
  });

  it('backpressure: buffered bytes stay within maxBufferedBytes plus one batch', async () => {
    const f = await writeTestFile('big.rio', 'none', 20_000, 500, 7, 16 * 1024);
    for (const threads of [1, 2, 4]) {
      const maxBufferedBytes = 256 * 1024;
      await using p = Prefetcher.create({ threads, batchSize: 64, maxBufferedBytes, maxBufferedBatches: 8 });
      p.enqueue({ path: f.path, start: 0, count: 20_000 });
      p.end();
      let largest = 0;
      let records = 0;
      let i = 0;
      for await (const b of p) {
        // A slow consumer now and then: the threads must stop when the ring is full.
        if (i++ % 40 === 0) await new Promise((r) => setTimeout(r, 15));
        const s = p.stats;
        expect(s.bufferedBatches).toBeLessThanOrEqual(8);
        largest = Math.max(largest, b.data.byteLength + b.bounds.byteLength);
        records += b.length;
      }
      expect(records).toBe(20_000);
      const s = p.stats;
      expect(s.peakBufferedBytes).toBeLessThanOrEqual(maxBufferedBytes + largest);
      expect(s.peakBufferedBatches).toBe(8); // it did read ahead, up to the bound
      expect(s.bufferedBytes).toBe(0);
    }
  });

  it('wakes a waiting consumer the same way with an AsyncWorker per pull', async () => {
    const f = await writeTestFile('worker.rio', 'snappy', 700, 200, 8);
    const ranges = [
      { path: f.path, start: 3, count: 500 },
      { path: f.path, start: 0, count: 700 },
    ];
    const a = await run({ threads: 2, batchSize: 50, wakeup: 'worker' }, ranges);
    const b = await run({ threads: 2, batchSize: 50 }, ranges);
    expect(a.batches.map((x) => [x.range.id, x.firstRecord, x.length])).toEqual(
      b.batches.map((x) => [x.range.id, x.firstRecord, x.length]),
    );
  });

  it('waits for ranges enqueued later, and ends only after end()', async () => {
    const f = await writeTestFile('later.rio', 'none', 100, 50, 9);
    await using p = Prefetcher.create({ threads: 1, batchSize: 100 });
    const pending = p.next();
    setTimeout(() => p.enqueue({ path: f.path, start: 0, count: 100 }), 20);
    const first = await pending;
    expect(first.done).toBe(false);
    expect(first.value?.length).toBe(100);
    const second = p.next();
    setTimeout(() => p.end(), 20);
    expect((await second).done).toBe(true);
    expect(() => p.enqueue({ path: f.path, start: 0, count: 1 })).toThrow(RecordIOError);
  });

  it('serves concurrent next() calls in order', async () => {
    const f = await writeTestFile('concurrent.rio', 'gzip', 640, 100, 12);
    await using p = Prefetcher.create({ threads: 2, batchSize: 64 });
    p.enqueue({ path: f.path, start: 0, count: 640 });
    p.end();
    const results = await Promise.all(Array.from({ length: 11 }, () => p.next()));
    expect(results.map((r) => (r.done ? 'done' : r.value.firstRecord))).toEqual([
      0,
      64,
      128,
      192,
      256,
      320,
      384,
      448,
      512,
      576,
      'done',
    ]);
  });

  it('close() mid-stream resolves a pending next() as done and is idempotent', async () => {
    const p = Prefetcher.create({ threads: 2 });
    const pending = p.next();
    p.close();
    expect((await pending).done).toBe(true);
    p.close();
    expect(p.closed).toBe(true);
    expect((await p.next()).done).toBe(true);
    expect(() => p.enqueue({ path: 'x.rio', start: 0, count: 1 })).toThrow(/CLOSED/);
  });

  it('close() mid-stream releases everything: thousands of cycles keep RSS bounded', async () => {
    const f = await writeTestFile('cycles.rio', 'gzip', 4000, 400, 10, 16 * 1024);
    const cycle = async (i: number) => {
      const p = Prefetcher.create({ threads: 1 + (i % 3), batchSize: 32, maxBufferedBytes: 4 * 1024 * 1024 });
      p.enqueue({ path: f.path, start: 0, count: 4000 });
      p.enqueue({ path: f.path, start: 100, count: 3000 });
      for (let k = 0; k < i % 4; k++) await p.next();
      p.close();
    };
    for (let i = 0; i < 300; i++) await cycle(i);
    await new Promise((r) => setTimeout(r, 50));
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 3000; i++) await cycle(i);
    await new Promise((r) => setTimeout(r, 50));
    const growth = process.memoryUsage().rss - before;
    // Each cycle buffers up to 4 MiB; a leak of even one buffer per cycle would add gigabytes.
    expect(growth).toBeLessThan(96 * 1024 * 1024);
  }, 120_000);

  it('frees delivered batches even when they are always ready (threads: 0 never waits)', async () => {
    const f = await writeTestFile('ready.rio', 'none', 4000, 2000, 11, 256 * 1024);
    await using p = Prefetcher.create({ threads: 0, batchSize: 256 });
    for (let k = 0; k < 200; k++) p.enqueue({ path: f.path, start: 0, count: 4000 });
    p.end();
    const before = process.memoryUsage().rss;
    let bytes = 0;
    let peak = before;
    for await (const batch of p) {
      bytes += batch.data.byteLength;
      peak = Math.max(peak, process.memoryUsage().rss);
    }
    expect(bytes).toBeGreaterThan(300 * 1024 * 1024);
    // Finalizers of dropped batches run only when the event loop turns: the prefetcher lets it.
    expect(peak - before).toBeLessThan(96 * 1024 * 1024);
  });

  it('checks its arguments', () => {
    expect(() => Prefetcher.create({ threads: -1 })).toThrow(
      'Expected an integer in [0, 64] for options.threads but received -1',
    );
    expect(() => Prefetcher.create({ batchSize: 0 })).toThrow(RangeError);
    expect(() => Prefetcher.create({ onCorruptChunk: 'drop' as 'skip' })).toThrow(RangeError);
    expect(() => Prefetcher.create({ nope: 1 } as PrefetcherOptions)).toThrow(TypeError);
    const p = Prefetcher.create({ threads: 0 });
    expect(() => p.enqueue({ path: '', start: 0, count: 1 })).toThrow(TypeError);
    expect(() => p.enqueue({ path: 'a.rio', start: 1.5, count: 1 })).toThrow(RangeError);
    expect(() => p.enqueue({ path: 'a.rio', start: 0 } as never)).toThrow(TypeError);
    p.close();
  });
});
