/**
 * The decisions of the tuned RecordIO read-ahead, on the process's real tuner with rates this test
 * sets (no clock, no machine load): the threads and bound the hill climb chooses for given decoding
 * and consumer times and budgets, a thread that does not raise the batch rate taken back, and the
 * bytes the stage counts. The reader end to end is in recordio-auto-prefetch.test.ts.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  autotuneSnapshot,
  configureAutotune,
  defaultCpuBudget,
  defaultDataRamBudget,
  type StageSettings,
  tuneNow,
} from '../../src/dataset/autotune/index.js';
import { registerTunedStage, type TunedStage } from '../../src/dataset/autotune/tuner.js';
import {
  type ReadAheadLimits,
  readAheadBound,
  readAheadRateWindow,
  readAheadStageSpec,
} from '../../src/readers/read-ahead-tuning.js';

const MIB = 2 ** 20;
/** Batches of 4096 records of 400 bytes, as the reader's default batch size makes them. */
const BATCH_BYTES = 1_650_000;
const LIMITS: ReadAheadLimits = {
  maxThreads: 3,
  maxBytes: 64 * MIB,
  tuneThreads: true,
  tuneBytes: true,
  maxBatchBytes: 4 * MIB,
  batchRecords: 4096,
};

afterEach(() => configureAutotune({ ramBudgetBytes: defaultDataRamBudget(), cpuBudget: defaultCpuBudget() }));

interface Ring {
  readonly stage: TunedStage;
  /** What the tuner applied, as the native prefetcher would be told: active threads and bytes. */
  readonly applied: { threads: number; bytes: number }[];
  /** `count` batches returned, one every `everyMs` of the test's own clock. */
  returns(count: number, everyMs: number): void;
}

/** The read-ahead's stage registered with the tuner, its rates measured as `decodeMs` and `consumerMs` per batch. */
function measuredRing(decodeMs: number, consumerMs: number, limits = LIMITS): Ring {
  const applied: { threads: number; bytes: number }[] = [];
  const stage = registerTunedStage(
    readAheadStageSpec(limits, (settings: StageSettings) =>
      applied.push({ threads: settings.parallelism, bytes: readAheadBound(settings, BATCH_BYTES, limits) }),
    ),
  );
  for (let i = 0; i < 4; i++) {
    stage.meter.addInput(0);
    stage.meter.addWork(decodeMs, 1);
    stage.meter.addConsumer(consumerMs);
    stage.meter.addElementBytes(BATCH_BYTES);
  }
  let now = 0;
  const returns = (count: number, everyMs: number) => {
    for (let i = 0; i < count; i++) {
      now += everyMs;
      stage.elementReturned(now);
    }
  };
  return { stage, applied, returns };
}

/** Runs `body` on a ring measured at `decodeMs` and `consumerMs` per batch, then unregisters it. */
function withRing(decodeMs: number, consumerMs: number, body: (ring: Ring) => void): void {
  const ring = measuredRing(decodeMs, consumerMs);
  try {
    body(ring);
  } finally {
    ring.stage.unregister();
  }
}

/** A window of batches at `everyMs` under one thread, then a round: the settings it chose. */
function roundAfterOneThreadWindow(ring: Ring, everyMs: number): StageSettings {
  ring.returns(readAheadRateWindow(4096) + 1, everyMs);
  tuneNow();
  return ring.stage.settings;
}

describe('the read-ahead as a tuned stage', () => {
  it('measures a thread change over batches enough for about 4096 records, 8 to 64 of them', () => {
    expect(readAheadRateWindow(4096)).toBe(8);
    expect(readAheadRateWindow(64)).toBe(64);
    expect(readAheadRateWindow(512)).toBe(8);
    expect(readAheadRateWindow(128)).toBe(32);
    expect(readAheadRateWindow(1)).toBe(64);
  });

  it('bounds the ring at its buffer of measured batches, within the limit; a fixed bound stays', () => {
    expect(readAheadBound({ parallelism: 2, bufferSize: 4 }, 1000, LIMITS)).toBe(4000);
    expect(readAheadBound({ parallelism: 1, bufferSize: 100 }, BATCH_BYTES, LIMITS)).toBe(64 * MIB);
    expect(readAheadBound({ parallelism: 1, bufferSize: 2 }, 0, LIMITS)).toBe(1);
    expect(readAheadBound({ parallelism: 1, bufferSize: 2 }, 1000, { ...LIMITS, tuneBytes: false })).toBe(
      64 * MIB,
    );
  });

  it('gives decoding slower than the consumer a second thread, and keeps it when the batch rate rose', () => {
    configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget: 2 });
    // 8 ms to decode a batch, 2 ms to consume one: the consumer waits for the ring.
    withRing(8, 2, (ring) => {
      expect(ring.stage.settings).toEqual({ parallelism: 1, bufferSize: 2 });
      // Rounds before the rate under one thread is measured (a full window) add no thread.
      const tried = roundAfterOneThreadWindow(ring, 8);
      expect(tried.parallelism).toBe(2);
      expect(ring.applied.at(-1)).toEqual({ threads: 2, bytes: tried.bufferSize * BATCH_BYTES });
      // The batches in flight, then a window at twice the rate: kept, and the CPU budget is spent.
      ring.returns(2 + tried.bufferSize + readAheadRateWindow(4096) + 1, 4);
      expect(ring.stage.settings.parallelism).toBe(2);
      tuneNow();
      expect(ring.stage.settings.parallelism).toBe(2);
      // What /metrics, the live view and --stats show: the threads, the bound in batches, the rates.
      const shown = autotuneSnapshot().stages.find((s) => s.label === 'RecordIO read-ahead');
      expect(shown).toMatchObject({ parallelism: 2, workPerSecond: 125, consumerPerSecond: 500 });
      expect(shown?.elementBytes).toBe(BATCH_BYTES);
    });
  });

  it('takes back a thread that left the batch rate where it was', () => {
    configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget: 2 });
    withRing(8, 2, (ring) => {
      const tried = roundAfterOneThreadWindow(ring, 8);
      expect(tried.parallelism).toBe(2);
      // Same rate after the change (the disk, not the decoding, was the limit): one thread again.
      ring.returns(2 + tried.bufferSize + readAheadRateWindow(4096) + 1, 8);
      expect(ring.stage.settings.parallelism).toBe(1);
      expect(ring.applied.at(-1)?.threads).toBe(1);
      // And not tried again at the next round.
      tuneNow();
      expect(ring.stage.settings.parallelism).toBe(1);
    });
  });

  it('keeps one thread when decoding is faster than the consumer, or when the CPU budget is one thread', () => {
    configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget: 2 });
    // Decoding 20x faster than the consumer: a second thread would cut no wait.
    withRing(0.1, 2, (ring) => expect(roundAfterOneThreadWindow(ring, 2).parallelism).toBe(1));
    configureAutotune({ cpuBudget: 1 });
    withRing(8, 2, (ring) => expect(roundAfterOneThreadWindow(ring, 8).parallelism).toBe(1));
  });

  it("counts a fixed ring's decoding threads against the CPU budget the tuned stages share", () => {
    const fixed = measuredRing(8, 2, { ...LIMITS, tuneThreads: false, maxThreads: 2 });
    try {
      fixed.returns(readAheadRateWindow(4096) + 1, 8);
      for (const [cpuBudget, threads] of [
        [3, 1],
        [4, 2],
      ] as const) {
        configureAutotune({ ramBudgetBytes: 1024 * MIB, cpuBudget });
        // Another reader's ring, decoding slower than its consumer: it gets what the fixed one leaves.
        withRing(8, 2, (ring) => expect(roundAfterOneThreadWindow(ring, 8).parallelism).toBe(threads));
      }
      expect(fixed.stage.settings.parallelism).toBe(2);
    } finally {
      fixed.stage.unregister();
    }
  });

  it('grows the bound while the consumer is slower on average, never past the RAM budget', () => {
    // Room for 5 batches in all.
    const ramBudgetBytes = 5 * BATCH_BYTES;
    configureAutotune({ ramBudgetBytes, cpuBudget: 1 });
    // Decoding and consumer at about the same pace: each slot hides more of their variance.
    withRing(2, 2.1, (ring) => {
      for (let round = 0; round < 20; round++) {
        ring.returns(4, 2);
        tuneNow();
      }
      expect(ring.stage.settings.bufferSize).toBe(5);
      expect(autotuneSnapshot().modelledBytes).toBeLessThanOrEqual(ramBudgetBytes);
      expect(Math.max(...ring.applied.map((a) => a.bytes))).toBeLessThanOrEqual(ramBudgetBytes);
    });
  });

  it('counts its bound from registration: the largest batch until one is measured, a fixed bound whole', () => {
    const tuned = registerTunedStage(readAheadStageSpec(LIMITS, () => undefined));
    try {
      expect(autotuneSnapshot().modelledBytes).toBe(2 * 4 * MIB);
      tuned.meter.addElementBytes(1000);
      expect(autotuneSnapshot().modelledBytes).toBe(2 * 1000);
    } finally {
      tuned.unregister();
    }
    const fixed = registerTunedStage(
      readAheadStageSpec({ ...LIMITS, tuneBytes: false, maxBytes: 16 * MIB }, () => undefined),
    );
    try {
      fixed.meter.addElementBytes(0);
      expect(autotuneSnapshot().modelledBytes).toBe(16 * MIB);
    } finally {
      fixed.unregister();
    }
  });
});
