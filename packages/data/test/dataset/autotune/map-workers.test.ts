import { availableParallelism } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { autotuneSnapshot, configureAutotune } from '../../../src/dataset/autotune/index.js';
import { changeDidNotPay, RateWindow } from '../../../src/dataset/autotune/step-trial.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
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
    expect(most).toBe(1);
    expect(values).toEqual(Array.from({ length: 3000 }, (_, i) => i));
    expect(autotuneSnapshot().endedStages.at(-1)?.parallelism).toBe(1);
  });
});

describe('the measured step', () => {
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
});
