import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { DatasetError } from '../../../src/dataset/errors.js';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import type { ParallelMapIterator } from '../../../src/dataset/transforms/parallel-map.js';
import { assertCheckpointRoundTrip, drain } from '../../helpers/checkpoint.js';

const FNS = new URL('../fixtures/parallel-map-fns.mjs', import.meta.url);

interface Squared {
  value: number;
  index: number;
  threadId: number;
}

/** The OS threads of this process by id (worker threads are OS threads). */
function osThreadIds(): Set<string> {
  return new Set(readdirSync('/proc/self/task'));
}

/** The threads started since `before` and alive now. */
function startedSince(before: Set<string>): string[] {
  return [...osThreadIds()].filter((id) => !before.has(id));
}

/**
 * Those of `ids` still alive once they have ended, or after 2 s: a worker's OS thread can
 * outlive `terminate()` by a moment, so this polls; a leaked thread still fails. Ids, not a count,
 * so that other threads of the process ending or starting meanwhile change nothing.
 */
async function stillAliveAfterExit(ids: readonly string[]): Promise<string[]> {
  const deadline = Date.now() + 2000;
  let alive = ids.filter((id) => osThreadIds().has(id));
  while (alive.length > 0 && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 20));
    const now = osThreadIds();
    alive = alive.filter((id) => now.has(id));
  }
  return alive;
}

function squares(n: number, workers: number, bufferSize?: number): IterDataset<Squared> {
  return MapDataset.range(n)
    .toIterDataset({ threads: 2, prefetch: 4 })
    .mapParallel<Squared>({ module: FNS, export: 'square', args: { scale: 2 }, workers, bufferSize });
}

describe('IterDataset.mapParallel', () => {
  it('maps on several threads and keeps the parent order', async () => {
    const values = await squares(40, 3).toArray();
    expect(values.map((v) => v.value)).toEqual(Array.from({ length: 40 }, (_, i) => 2 * i * i));
    expect(values.map((v) => v.index)).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const threads = new Set(values.map((v) => v.threadId));
    expect(threads.has(0)).toBe(false); // never the main thread
    expect(threads.size).toBeGreaterThan(1);
  });

  it('runs on the calling thread with workers 0, with the same results', async () => {
    const values = await squares(20, 0).toArray();
    expect(values.map((v) => v.value)).toEqual(Array.from({ length: 20 }, (_, i) => 2 * i * i));
    expect(new Set(values.map((v) => v.threadId))).toEqual(new Set([0]));
    const inline = await assertCheckpointRoundTrip(() => squares(12, 0).iterator(), 13, { seed: 5 });
    expect(inline.map((v) => v.value)).toEqual(Array.from({ length: 12 }, (_, i) => 2 * i * i));
    // No read-ahead: the parent is read only as far as the elements returned.
    let reads = 0;
    const it = IterDataset.fromIterable(async function* () {
      for (let i = 0; i < 12; i++, reads++) yield i;
    })
      .mapParallel<Squared>({ module: FNS, export: 'square', workers: 0 })
      .iterator();
    await it.next();
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(reads).toBe(0); // the generator has not been resumed past element 0
    expect(it.getState()).toEqual({ parent: { consumed: 1 }, nextIndex: 1 });
  });

  it('restores exactly: the state is the parent state of the next element to return', async () => {
    const bytes = MapDataset.range(23)
      .shuffle(7)
      .toIterDataset()
      .batch(3)
      .map((batch) => Uint8Array.from(batch));
    const parallel = bytes.mapParallel<{ out: Float32Array; length: number }>({
      module: FNS,
      export: 'scaleBytes',
      args: { factor: 0.5 },
      workers: 2,
      bufferSize: 3,
    });
    const got = await assertCheckpointRoundTrip(() => parallel.iterator(), 10);
    const reference = (await bytes.toArray()).map((b) => Array.from(b, (x) => x * 0.5));
    expect(got.map((g) => Array.from(g.out))).toEqual(reference);
    expect(String(parallel)).toMatch(/-> Batch\(3\) -> Map -> ParallelMap\(scaleBytes, workers=2\)$/);

    // Which thread computed an element is not part of the output.
    const withoutThread = squares(15, 2, 4).map(({ value, index }) => ({ value, index }));
    const indexed = await assertCheckpointRoundTrip(() => withoutThread.iterator(), 16, { seed: 3 });
    expect(indexed.map((v) => [v.value, v.index])).toEqual(
      Array.from({ length: 15 }, (_, i) => [2 * i * i, i]),
    );
    const it = squares(15, 2).iterator();
    await it.next();
    await it.next();
    // Not the read-ahead: the parent has read further than element 2 by now.
    expect(it.getState()).toEqual({ parent: { nextIndex: 2 }, nextIndex: 2 });
    await (it as ParallelMapIterator<number, Squared>).close();
  });

  it('copies views to buffers of their own bytes and transfers the results', async () => {
    const big = new Uint8Array(1 << 20).map((_, i) => i % 251);
    const views = IterDataset.fromIterable(async function* () {
      for (let k = 0; k < 6; k++) yield big.subarray(k * 1000, k * 1000 + 100);
    });
    const results = await views
      .mapParallel<{ out: Float32Array; byteLength: number }>({
        module: FNS,
        export: 'scaleBytes',
        args: { factor: 2 },
        workers: 2,
      })
      .toArray();
    for (const [k, r] of results.entries()) {
      expect(r.byteLength).toBe(100); // only the view's bytes crossed, not the 1 MiB buffer
      expect(r.out).toBeInstanceOf(Float32Array);
      expect(Array.from(r.out)).toEqual(Array.from(big.subarray(k * 1000, k * 1000 + 100), (x) => 2 * x));
    }
    expect(big.byteLength).toBe(1 << 20); // the caller's buffer is not detached
  });

  it('reports a failing element by index and keeps the elements before it', async () => {
    const it = MapDataset.range(10)
      .toIterDataset()
      .mapParallel<number>({ module: FNS, export: 'failOn', args: { failOn: 5 }, workers: 2 })
      .iterator();
    for (let i = 0; i < 5; i++) expect(await it.next()).toEqual({ done: false, value: i });
    const error = await it.next().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DatasetError);
    expect((error as DatasetError).code).toBe('ERR_MAP_WORKER');
    expect((error as Error).message).toMatch(
      /failOn of file:.*parallel-map-fns\.mjs failed on element 5: bad value 5/,
    );
    // The stream goes on after the failed element, like a failed read of prefetch.
    expect(await it.next()).toEqual({ done: false, value: 6 });
    await it.return?.();
  });

  it('fails clearly on a bad export or module, and checks its arguments', async () => {
    const bad = MapDataset.range(3)
      .toIterDataset()
      .mapParallel({ module: FNS, export: 'notAFunction', workers: 1 });
    await expect(bad.toArray()).rejects.toThrow(
      /element 0: Export notAFunction of .* is not a function \(exports: /,
    );
    const missing = MapDataset.range(3)
      .toIterDataset()
      .mapParallel({ module: '/nonexistent/fns.mjs', export: 'x', workers: 1 });
    await expect(missing.toArray()).rejects.toMatchObject({ code: 'ERR_MAP_WORKER' });
    const base = MapDataset.range(3).toIterDataset();
    expect(() => base.mapParallel({ module: './fns.mjs' })).toThrow(
      new TypeError(
        'Expected an absolute path, a file: URL or a URL for options.module but received "./fns.mjs"',
      ),
    );
    expect(() => base.mapParallel({ module: FNS, ordered: false })).toThrow(TypeError);
    const uncloneable = IterDataset.fromIterable(async function* () {
      yield { f: () => 1 };
    }).mapParallel({ module: FNS, export: 'failOn', args: { failOn: null }, workers: 1 });
    await expect(uncloneable.toArray()).rejects.toThrow(/cannot send element 0 to a thread: /);
    expect(() => base.mapParallel({ module: FNS, workers: -1 })).toThrow(RangeError);
    expect(() => base.mapParallel({ module: FNS, bufferSize: 0 })).toThrow(RangeError);
    expect(() => base.mapParallel({ module: FNS, args: { f: () => 1 } as never })).not.toThrow();
    expect(() => base.mapParallel({ module: FNS, args: 10n as never })).toThrow(TypeError);
  });

  it('terminates its threads on return(), on break and at the end', async () => {
    let before = osThreadIds();
    const it = squares(200, 3).iterator() as ParallelMapIterator<number, Squared>;
    await it.next();
    expect(it.threadCount).toBe(3);
    let started = startedSince(before);
    expect(started.length).toBeGreaterThanOrEqual(3);
    const saved = it.getState();
    expect(await it.return()).toEqual({ done: true, value: undefined });
    expect(it.threadCount).toBe(0);
    expect(await stillAliveAfterExit(started)).toEqual([]);
    expect(await it.next()).toEqual({ done: true, value: undefined });
    // A restore reopens it, on new threads.
    before = osThreadIds();
    it.setState(saved);
    expect((await it.next()).value).toMatchObject({ value: 2, index: 1 });
    expect(it.threadCount).toBe(3);
    started = startedSince(before);
    expect(started.length).toBeGreaterThanOrEqual(3);
    await it.close();
    expect(it.threadCount).toBe(0);
    expect(await stillAliveAfterExit(started)).toEqual([]);

    let seen = 0;
    before = osThreadIds();
    const dataset = squares(200, 2);
    const iterator = dataset.iterator() as ParallelMapIterator<number, Squared>;
    for await (const _ of { [Symbol.asyncIterator]: () => iterator }) {
      if (++seen === 1) started = startedSince(before);
      if (seen === 3) break;
    }
    expect(started.length).toBeGreaterThanOrEqual(2);
    expect(iterator.threadCount).toBe(0);
    expect(await stillAliveAfterExit(started)).toEqual([]);

    before = osThreadIds();
    const ended = squares(5, 2).iterator() as ParallelMapIterator<number, Squared>;
    expect(await drain(ended)).toHaveLength(5);
    expect(ended.threadCount).toBe(0);
    // Every thread it started has ended (whatever else the process started meanwhile).
    expect(await stillAliveAfterExit(startedSince(before))).toEqual([]);
  });
});
