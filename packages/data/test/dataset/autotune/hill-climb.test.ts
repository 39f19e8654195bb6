import { describe, expect, it } from 'vitest';
import { type ClimbStage, hillClimb, stageBytes } from '../../../src/dataset/autotune/hill-climb.js';
import { bufferWaitMs } from '../../../src/dataset/autotune/model.js';

const MIB = 2 ** 20;

function mapStage(workMs: number, overrides: Partial<ClimbStage> = {}): ClimbStage {
  return {
    rates: { inputMs: 0.05, workMs, consumerMs: 0, elementBytes: 1024 },
    settings: { parallelism: 1, bufferSize: 1 },
    tuneParallelism: true,
    tuneBuffer: true,
    fixedBytes: 0,
    threadBytes: 16 * MIB,
    ...overrides,
  };
}

describe('bufferWaitMs (the M/M/1/K wait of tf.data model)', () => {
  it('is the whole producer time when the consumer never pauses', () => {
    expect(bufferWaitMs(4, 0, 1)).toBe(4);
    expect(bufferWaitMs(4, 0, 64)).toBe(4);
  });

  it('leaves about the difference when the producer is slower, whatever the buffer', () => {
    expect(bufferWaitMs(5, 3, 1000)).toBeCloseTo(2, 6);
  });

  it('falls with every slot when the producer is faster, and is 1 / (n + 1) at equal rates', () => {
    const waits = [1, 2, 4, 8, 16].map((n) => bufferWaitMs(2, 3, n));
    for (let i = 1; i < waits.length; i++) expect(waits[i]).toBeLessThan(waits[i - 1] as number);
    expect(bufferWaitMs(2, 2, 3)).toBeCloseTo(0.5, 9);
  });
});

describe('hillClimb', () => {
  it('gives a slow map stage threads up to the CPU budget and a cheap one none beyond its input', () => {
    const [slow] = hillClimb([mapStage(8)], { ramBytes: 1024 * MIB, cpuThreads: 6 });
    expect(slow?.parallelism).toBe(6);
    expect(slow?.bufferSize).toBeGreaterThanOrEqual(6);
    // Work of 0.06 ms behind reads of 0.05 ms: a second thread reaches the input rate, a third gains nothing.
    const [cheap] = hillClimb([mapStage(0.06)], { ramBytes: 1024 * MIB, cpuThreads: 6 });
    expect(cheap?.parallelism).toBe(2);
  });

  it('grows a prefetch buffer while the consumer waits, and stops when the gain is under 1%', () => {
    const prefetch: ClimbStage = {
      rates: { inputMs: 2, workMs: 0, consumerMs: 3, elementBytes: 100 },
      settings: { parallelism: 1, bufferSize: 1 },
      tuneParallelism: false,
      tuneBuffer: true,
      fixedBytes: 0,
      threadBytes: 0,
    };
    const [grown] = hillClimb([prefetch], { ramBytes: 1024 * MIB, cpuThreads: 1 });
    expect(grown?.bufferSize).toBeGreaterThan(4);
    expect(grown?.bufferSize).toBeLessThan(64);
    expect(grown?.parallelism).toBe(1);
  });

  it('caps buffers at a budget that is too small, and never passes it', () => {
    const big: ClimbStage = {
      rates: { inputMs: 2, workMs: 0, consumerMs: 3, elementBytes: MIB },
      settings: { parallelism: 1, bufferSize: 1 },
      tuneParallelism: false,
      tuneBuffer: true,
      fixedBytes: 0,
      threadBytes: 0,
    };
    const [capped] = hillClimb([big], { ramBytes: 3.5 * MIB, cpuThreads: 1 });
    expect(capped?.bufferSize).toBe(3);
    // Elements that grew past the budget: the buffer is cut back under it.
    const [cut] = hillClimb([{ ...big, settings: { parallelism: 1, bufferSize: 40 } }], {
      ramBytes: 5 * MIB,
      cpuThreads: 1,
    });
    expect(stageBytes(big, cut!)).toBeLessThanOrEqual(5 * MIB);
  });

  it('shares the budgets between stages: the one with the larger gain gets the thread', () => {
    const settings = hillClimb([mapStage(1), mapStage(10)], { ramBytes: 1024 * MIB, cpuThreads: 3 });
    expect(settings.map((s) => s.parallelism)).toEqual([1, 2]);
  });

  it('never changes settings that are not auto', () => {
    const fixed = mapStage(8, { tuneParallelism: false, tuneBuffer: false });
    expect(hillClimb([fixed], { ramBytes: 1024 * MIB, cpuThreads: 8 })).toEqual([
      { parallelism: 1, bufferSize: 1 },
    ]);
  });
});
