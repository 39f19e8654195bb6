import { availableParallelism } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { autotuneSnapshot, configureAutotune } from '../../../src/dataset/autotune/index.js';
import type { StageSettings } from '../../../src/dataset/autotune/model.js';
import { changeDidNotPay, RATE_WINDOW, RateWindow } from '../../../src/dataset/autotune/step-trial.js';
import { registerTunedStage } from '../../../src/dataset/autotune/tuner.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { ThreadPool } from '../../../src/dataset/thread-pool/thread-pool.js';
import type { ParallelMapIterator } from '../../../src/dataset/transforms/parallel-map.js';

const FNS = new URL('../fixtures/autotune-fns.mjs', import.meta.url);
const MIB = 2 ** 20;

// The default CPU budget ('auto'): the cores less the consumer's, plus that core while it idles.
beforeEach(() => configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget: 'auto' }));
afterEach(() => configureAutotune({ cpuBudget: 'auto' }));

/** Runs a map of `ms` busy work per element over 0..n-1 with 'auto' workers; the most threads it had. */
async function mostWorkers(n: number, ms: number): Promise<{ most: number; values: number[] }> {
  const it = MapDataset.range(n)
    .toIterDataset()
    .mapParallel<{ value: number }>({
      module: FNS,
      export: 'spin',
      args: { ms },
      workers: 'auto',
      bufferSize: 'auto',
    })
    .iterator() as ParallelMapIterator<number, { value: number }>;
  let most = it.settings.workers;
  const values: number[] = [];
  for (let r = await it.next(); !r.done; r = await it.next()) {
    values.push(r.value.value);
    most = Math.max(most, it.settings.workers);
  }
  return { most, values };
}

describe("mapParallel({ workers: 'auto' }) under the default CPU budget", () => {
  it.runIf(availableParallelism() >= 2)(
    'adds a second thread to a CPU-bound map whose consumer waits (2 on a 2-core machine)',
    async () => {
      const { most, values } = await mostWorkers(400, 2);
      expect(most).toBeGreaterThanOrEqual(2);
      expect(most).toBeLessThanOrEqual(availableParallelism());
      expect(values).toEqual(Array.from({ length: 400 }, (_, i) => i));
    },
  );

  it('keeps a cheap map at one thread: a second one would not pay for its messages', async () => {
    const { most, values } = await mostWorkers(3000, 0);
    // On a loaded machine a thread's work can look long (the thread descheduled mid-map), so the
    // tuner may try a second thread; the trial then measures no gain and takes it back.
    expect(most).toBeLessThanOrEqual(2);
    expect(values).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(autotuneSnapshot().endedStages.at(-1)?.parallelism).toBe(1);
  });
});

describe('the measured step', () => {
  it('ends the threads a pool was resized below once they are idle, and keeps mapping', async () => {
    const owner = {};
    const pool = new ThreadPool(
      { moduleUrl: FNS.href, exportName: 'spin', args: { ms: 0 }, size: 2, transferInputs: false },
      owner,
    );
    await Promise.all([pool.run(0, 0), pool.run(1, 1)]);
    expect(pool.size).toBe(2);
    pool.resize(1);
    expect(await pool.run(2, 2)).toEqual({ value: 2, square: 4, spins: true });
    expect(pool.size).toBe(1);
    expect(pool.takeWork().count).toBe(3);
    await pool.close();
  });

  it('rates a full window of returns, and keeps a change only when it gained', () => {
    const window = new RateWindow(4);
    for (const t of [0, 10, 20, 30]) window.add(t);
    expect(window.perSecond()).toBeUndefined();
    window.add(40);
    expect(window.perSecond()).toBe(100);
    window.add(100);
    expect(window.perSecond()).toBeCloseTo(4000 / 90, 9);
    window.clear();
    expect(window.full).toBe(false);
    expect(changeDidNotPay(100, 90)).toBe(true);
    expect(changeDidNotPay(100, 102)).toBe(true);
    expect(changeDidNotPay(100, 180)).toBe(false);
  });

  /** A registered map stage at 1 thread, its output measured over a full window at 1 ms apart. */
  function measuredStage() {
    const applied: StageSettings[] = [];
    const stage = registerTunedStage({
      label: 'ParallelMap(trial)',
      initial: { parallelism: 1, bufferSize: 2 },
      tuneParallelism: true,
      tuneBuffer: true,
      hasWork: true,
      apply: (settings) => applied.push(settings),
    });
    let now = 0;
    const returns = (count: number, everyMs: number) => {
      for (let i = 0; i < count; i++) {
        now += everyMs;
        stage.elementReturned(now);
      }
    };
    returns(RATE_WINDOW + 1, 1);
    return { stage, applied, returns };
  }

  it('takes back a thread that left the output rate where it was, and tries it again only much later', () => {
    const { stage, applied, returns } = measuredStage();
    expect(stage.maxParallelism).toBe(2);
    stage.change({ parallelism: 2, bufferSize: 4 });
    // The 2 elements in flight at the change and the new buffer's 4 (the new thread starts), then a
    // window at the same rate.
    returns(2 + 4 + RATE_WINDOW + 1, 1);
    expect(applied).toEqual([
      { parallelism: 2, bufferSize: 4 },
      { parallelism: 1, bufferSize: 2 },
    ]);
    expect(stage.settings).toEqual({ parallelism: 1, bufferSize: 2 });
    returns(2 * RATE_WINDOW, 1);
    expect(stage.maxParallelism).toBe(1);
    // 8 windows after the step back, the thread may be tried again.
    returns(6 * RATE_WINDOW, 1);
    expect(stage.maxParallelism).toBe(2);
    stage.unregister();
  });

  it('keeps a thread that raised the output rate, and then lets the next one be tried', () => {
    const { stage, applied, returns } = measuredStage();
    stage.change({ parallelism: 2, bufferSize: 4 });
    expect(stage.maxParallelism).toBe(2);
    returns(2 + 4 + RATE_WINDOW + 1, 0.5);
    expect(applied).toEqual([{ parallelism: 2, bufferSize: 4 }]);
    expect(stage.maxParallelism).toBe(3);
    stage.unregister();
  });
});
