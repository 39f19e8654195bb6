import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  autotuneSnapshot,
  configureAutotune,
  defaultCpuBudget,
  defaultDataRamBudget,
  reserveDataBudget,
} from '../../../src/dataset/autotune/index.js';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import type { ParallelMapIterator } from '../../../src/dataset/transforms/parallel-map.js';
import type { PrefetchIterator } from '../../../src/dataset/transforms/prefetch.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';

const FNS = new URL('../fixtures/autotune-fns.mjs', import.meta.url);
const MIB = 2 ** 20;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeEach(() => configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget: 4 }));
afterEach(() => configureAutotune({ ramBudgetBytes: defaultDataRamBudget(), cpuBudget: defaultCpuBudget() }));

/** A CPU-bound map (`ms` per element) over 0..n-1 with the given settings. */
function spins(n: number, ms: number, workers: number | 'auto', bufferSize: number | 'auto' | undefined) {
  return MapDataset.range(n)
    .toIterDataset({ threads: 1, prefetch: 4 })
    .mapParallel<{ value: number; square: number }>({
      module: FNS,
      export: 'spin',
      args: { ms },
      workers,
      bufferSize,
    });
}

describe("'auto' settings", () => {
  it('never change the elements or their order: auto against several fixed settings', async () => {
    const expected = Array.from({ length: 150 }, (_, i) => ({ value: i, square: i * i, spins: true }));
    const pipelines = [
      spins(150, 0.2, 'auto', 'auto').prefetch('auto'),
      spins(150, 0.2, 0, undefined).prefetch(1),
      spins(150, 0.2, 1, 1).prefetch(2),
      spins(150, 0.2, 3, 8).prefetch(16),
      spins(150, 0.2, 'auto', 4).prefetch(8),
      spins(150, 0.2, 2, 'auto').prefetch('auto'),
    ];
    for (const pipeline of pipelines) expect(await pipeline.toArray()).toEqual(expected);
  });

  it('give a slow map stage more threads, within the CPU budget', async () => {
    configureAutotune({ cpuBudget: 3 });
    const it = spins(200, 2, 'auto', 'auto').iterator() as ParallelMapIterator<number, unknown>;
    expect(it.settings.workers).toBe(1);
    let most = 0;
    for (let r = await it.next(); !r.done; r = await it.next()) most = Math.max(most, it.settings.workers);
    expect(most).toBeGreaterThanOrEqual(2);
    expect(most).toBeLessThanOrEqual(3);
  });

  it("leave the threads reserved outside the tuner (a reader's decoding threads) to their owner", async () => {
    configureAutotune({ cpuBudget: 3 });
    const reservation = reserveDataBudget({ label: 'RecordIO read-ahead', threads: 2, bytes: 0 });
    try {
      const it = spins(80, 2, 'auto', 'auto').iterator() as ParallelMapIterator<number, unknown>;
      for (let r = await it.next(); !r.done; r = await it.next());
      expect(it.settings.workers).toBe(1);
    } finally {
      reservation.unregister();
    }
    expect(autotuneSnapshot().endedStages.at(-1)?.label).toBe('RecordIO read-ahead');
  });

  it('leave a map stage at one thread when its reads, not its work, are the bottleneck', async () => {
    const slowReads = IterDataset.fromIterable(async function* () {
      for (let i = 0; i < 120; i++) {
        await sleep(2);
        yield i;
      }
    }).mapParallel<{ value: number }>({
      module: FNS,
      export: 'spin',
      args: { ms: 0.01 },
      workers: 'auto',
      bufferSize: 'auto',
    });
    const it = slowReads.iterator() as ParallelMapIterator<number, unknown>;
    for (let r = await it.next(); !r.done; r = await it.next());
    expect(it.settings.workers).toBe(1);
  });

  it('grow a prefetch buffer for a consumer that is slower on average than its parent, never past the budget', async () => {
    const bytes = 256 * 1024;
    // Elements of 256 KiB, a budget of about 8 of them: the buffer may grow to 8 and no further.
    configureAutotune({ ramBudgetBytes: 8 * bytes + 1000 });
    const produced = IterDataset.fromIterable(async function* () {
      for (let i = 0; i < 200; i++) {
        // Bursty: mostly fast, every tenth read slow.
        await sleep(i % 10 === 0 ? 12 : 0);
        yield new Uint8Array(bytes).fill(i % 256);
      }
    }).prefetch('auto');
    const it = produced.iterator() as PrefetchIterator<Uint8Array>;
    let most = 0;
    let count = 0;
    for (let r = await it.next(); !r.done; r = await it.next()) {
      expect(r.value[0]).toBe(count++ % 256);
      await sleep(2);
      most = Math.max(most, it.bufferSize);
      const snapshot = autotuneSnapshot();
      expect(snapshot.modelledBytes).toBeLessThanOrEqual(snapshot.ramBudgetBytes);
    }
    expect(count).toBe(200);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(8);
  });

  it('report the chosen values and measured rates of live stages, and drop them at the end', async () => {
    const it = spins(60, 0.5, 'auto', 'auto').iterator();
    for (let i = 0; i < 40; i++) await it.next();
    const stage = autotuneSnapshot().stages.find((s) => s.label === 'ParallelMap(spin)');
    expect(stage?.parallelism).toBeGreaterThanOrEqual(1);
    expect(stage?.elements).toBe(40);
    expect(stage?.workPerSecond).toBeGreaterThan(0);
    expect(stage?.workPerSecond).toBeLessThan(2000 * 1.5);
    expect(stage?.elementBytes).toBeGreaterThan(0);
    for (let r = await it.next(); !r.done; r = await it.next());
    expect(autotuneSnapshot().stages.find((s) => s.label === 'ParallelMap(spin)')).toBeUndefined();
  });

  // Last: the round trip leaves iterators unfinished, whose stages hold budget until collected.
  it('keep checkpoints exact: restored anywhere, the rest equals the uninterrupted run', async () => {
    const values = await assertCheckpointRoundTrip(
      () => spins(24, 0.1, 'auto', 'auto').prefetch('auto').iterator(),
      25,
      { seed: 3, randomRestores: 6 },
    );
    expect(values.map((v) => v.value)).toEqual(Array.from({ length: 24 }, (_, i) => i));
  });
});
