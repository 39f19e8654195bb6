/**
 * `prefetch: { threads: 'auto', maxBufferedBytes: 'auto' }` of the RecordIO reader, on real gzip
 * files through the native prefetcher, tuned while it reads: whatever the tuner chooses, the
 * records and their order, the ceilings and the budgets hold, and the chosen values are reported.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mulberry32 } from '@edl/common';
import { RecordIOWriter } from '@edl/recordio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  autotuneSnapshot,
  configureAutotune,
  defaultCpuBudget,
  defaultDataRamBudget,
} from '../../src/dataset/autotune/index.js';
import { RecordIODataReader, type RecordIOPrefetchOptions } from '../../src/readers/index.js';

const MIB = 2 ** 20;
const LABEL = 'RecordIO read-ahead';
let dir: string;
let file: string;
const records: Uint8Array[] = [];
/** Compressible text records: inflating them is real work for the decoding threads. */
const TEXT_RECORDS = 60_000;
let textFile: string;
const textRecords: Uint8Array[] = [];

beforeAll(async () => {
  const random = mulberry32(7);
  dir = await mkdtemp(join(tmpdir(), 'edl-auto-prefetch-'));
  file = join(dir, 'part-0.rio');
  const writer = await RecordIOWriter.create(file, { compressor: 'gzip', maxChunkBytes: 64 * 1024 });
  for (let i = 0; i < 3000; i++) {
    // Random bytes: gzip cannot shrink them, so the native ring's estimate of a chunk's decoded size is right.
    const record = new Uint8Array(2000);
    for (let b = 0; b < record.length; b++) record[b] = Math.floor(random() * 256);
    records.push(record);
    writer.write(record);
  }
  writer.close();
  textFile = join(dir, 'text-0.rio');
  const textWriter = await RecordIOWriter.create(textFile, { compressor: 'gzip', maxChunkBytes: 32 * 1024 });
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
  for (let i = 0; i < TEXT_RECORDS; i++) {
    let text = `${i}:`;
    while (text.length < 400) text += `${words[Math.floor(random() * words.length)]} `;
    const record = new TextEncoder().encode(text);
    textRecords.push(record);
    textWriter.write(record);
  }
  textWriter.close();
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => configureAutotune({ ramBudgetBytes: defaultDataRamBudget(), cpuBudget: defaultCpuBudget() }));

async function readAll(reader: RecordIODataReader): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const record of reader.readRecords({ shardName: file, start: 0, end: records.length }))
    out.push(record.slice());
  return out;
}

describe("RecordIO reader 'auto' read-ahead", () => {
  it('reads the same records, keeps its ring within a quarter of the RAM budget, and counts against it', async () => {
    configureAutotune({ ramBudgetBytes: 8 * MIB, cpuBudget: 3 });
    const reader = await RecordIODataReader.open({
      files: [file],
      // Batches of 64 records (128 KB): a batch is admitted whole, whatever the bound.
      prefetch: { threads: 'auto', maxBufferedBytes: 'auto', storedFiles: 'prefetch', batchSize: 64 },
    });
    const got = await readAll(reader);
    expect(got.length).toBe(records.length);
    expect(got.every((r, i) => Buffer.compare(r, records[i] as Uint8Array) === 0)).toBe(true);
    // A quarter of 8 MiB; the native ring admits compressed chunks on an estimate of their size.
    expect(reader.prefetchStats?.peakBufferedBytes).toBeLessThanOrEqual(2 * MIB + 256 * 1024);
    // A tuned stage now: its threads within the budget (3, plus the consumer's core at most 4).
    const stage = autotuneSnapshot().stages.find((s) => s.label === 'RecordIO read-ahead');
    expect(stage?.parallelism).toBeGreaterThanOrEqual(1);
    expect(stage?.parallelism).toBeLessThanOrEqual(4);
    expect(reader.prefetchStats?.activeThreads).toBe(stage?.parallelism);
    // Counted at its bound (which follows the mean batch size within an eighth).
    expect(autotuneSnapshot().modelledBytes).toBeGreaterThanOrEqual(
      ((reader.prefetchStats?.maxBufferedBytes ?? Number.POSITIVE_INFINITY) * 7) / 8,
    );
    await reader.close();
    expect(autotuneSnapshot().stages.find((s) => s.label === 'RecordIO read-ahead')).toBeUndefined();
  });

  it("stays within the CPU budget: one decoding thread under a budget of 1, and 'auto' is kept by describe()", async () => {
    configureAutotune({ cpuBudget: 1 });
    const reader = await RecordIODataReader.open({
      files: [file],
      prefetch: { threads: 'auto', storedFiles: 'prefetch' },
    });
    expect((await readAll(reader)).length).toBe(records.length);
    expect(autotuneSnapshot().stages.find((s) => s.label === 'RecordIO read-ahead')?.parallelism).toBe(1);
    expect(JSON.stringify(reader.describe())).toContain('"threads":"auto"');
    await reader.close();
  });
});

/** A reader of the text file, in batches of 64 records. */
function openText(prefetch: RecordIOPrefetchOptions = { threads: 'auto', maxBufferedBytes: 'auto' }) {
  return RecordIODataReader.open({
    files: [textFile],
    prefetch: { storedFiles: 'prefetch', batchSize: 64, ...prefetch },
  });
}

interface Observed {
  readonly records: Uint8Array[];
  /** At every batch boundary: the stage shown agreed with the native prefetcher's settings. */
  readonly reportedAsApplied: boolean;
  readonly maxActiveThreads: number;
  readonly maxBoundBytes: number;
  readonly maxModelledBytes: number;
}

/** Reads `count` records, with `perBatchMs` of consumer time per 64 records (0: as fast as it can). */
async function read(reader: RecordIODataReader, count: number, perBatchMs: number): Promise<Observed> {
  const out: Uint8Array[] = [];
  let reportedAsApplied = true;
  let maxActiveThreads = 0;
  let maxBoundBytes = 0;
  let maxModelledBytes = 0;
  for await (const record of reader.readRecords({ shardName: textFile, start: 0, end: count })) {
    out.push(record.slice());
    if (out.length % 64 !== 0) continue;
    const stats = reader.prefetchStats;
    const snapshot = autotuneSnapshot();
    const stage = snapshot.stages.find((s) => s.label === LABEL);
    reportedAsApplied &&= stage !== undefined && stage.parallelism === stats?.activeThreads;
    maxActiveThreads = Math.max(maxActiveThreads, stats?.activeThreads ?? 0);
    maxBoundBytes = Math.max(maxBoundBytes, stats?.maxBufferedBytes ?? 0);
    maxModelledBytes = Math.max(maxModelledBytes, snapshot.modelledBytes);
    if (perBatchMs > 0) await sleep(perBatchMs);
  }
  return { records: out, reportedAsApplied, maxActiveThreads, maxBoundBytes, maxModelledBytes };
}

/** The text file's records, read through a prefetcher of one thread and a fixed bound. */
async function readFixed(count: number): Promise<Uint8Array[]> {
  const reader = await openText({ threads: 1, maxBufferedBytes: 4 * MIB });
  try {
    return (await read(reader, count, 0)).records;
  } finally {
    await reader.close();
  }
}

function expectSame(got: readonly Uint8Array[], want: readonly Uint8Array[]): void {
  expect(got.length).toBe(want.length);
  expect(got.every((r, i) => Buffer.compare(r, want[i] as Uint8Array) === 0)).toBe(true);
}

/**
 * Whatever the tuner chooses here (that depends on this machine's speed and load, and is decided
 * in read-ahead-tuning.test.ts from rates the test sets), these hold.
 */
describe("RecordIO reader 'auto' read-ahead, tuned while reading", () => {
  it('yields the records of a fixed read-ahead, in order, for a fast and a slow consumer, within the ceilings', async () => {
    const ramBudgetBytes = 64 * MIB;
    configureAutotune({ ramBudgetBytes, cpuBudget: 2 });
    const fixed = await readFixed(TEXT_RECORDS);
    expectSame(fixed, textRecords);
    for (const [count, perBatchMs] of [
      [TEXT_RECORDS, 0],
      [200 * 64, 2],
    ] as const) {
      const reader = await openText();
      try {
        const seen = await read(reader, count, perBatchMs);
        expectSame(seen.records, fixed.slice(0, count));
        // The threads within those started (the CPU budget plus the consumer's core, at most 4),
        // the bound within a quarter of the RAM budget, the model within all of it.
        expect(reader.prefetchStats?.threads).toBe(Math.min(4, 3, availableParallelism()));
        expect(seen.maxActiveThreads).toBeGreaterThanOrEqual(1);
        expect(seen.maxActiveThreads).toBeLessThanOrEqual(2);
        expect(seen.maxBoundBytes).toBeLessThanOrEqual(ramBudgetBytes / 4);
        expect(seen.maxModelledBytes).toBeLessThanOrEqual(ramBudgetBytes);
        // The native ring admits a compressed chunk on an estimate of its decoded size.
        expect(reader.prefetchStats?.peakBufferedBytes).toBeLessThanOrEqual(ramBudgetBytes / 4 + MIB);
        expect(seen.reportedAsApplied).toBe(true);
        // The bound is the buffer of measured batches, as the stage is shown and modelled.
        const stage = autotuneSnapshot().stages.find((s) => s.label === LABEL);
        const bound = reader.prefetchStats?.maxBufferedBytes ?? 0;
        expect(stage?.elementBytes).toBeGreaterThan(64 * 400);
        expect(Math.abs(bound - (stage?.bufferSize ?? 0) * (stage?.elementBytes ?? 0))).toBeLessThanOrEqual(
          bound / 8 + 1,
        );
        expect(stage?.workPerSecond).toBeGreaterThan(0);
        expect(stage?.consumerPerSecond).toBeGreaterThan(0);
      } finally {
        await reader.close();
      }
      expect(autotuneSnapshot().stages.find((s) => s.label === LABEL)).toBeUndefined();
      expect(autotuneSnapshot().endedStages.at(-1)?.label).toBe(LABEL);
    }
  }, 60_000);

  it('counts a short read: one batch, and the ring is modelled at its bound', async () => {
    configureAutotune({ ramBudgetBytes: 64 * MIB, cpuBudget: 2 });
    const reader = await openText();
    try {
      const seen = await read(reader, 64, 0);
      expectSame(seen.records, textRecords.slice(0, 64));
      const stage = autotuneSnapshot().stages.find((s) => s.label === LABEL);
      expect(stage).toMatchObject({ parallelism: 1, bufferSize: 2 });
      // Measured from the first batch: its 64 records of at least 400 bytes, and their bounds.
      expect(stage?.elementBytes).toBeGreaterThanOrEqual(64 * 400);
      expect(autotuneSnapshot().modelledBytes).toBeGreaterThanOrEqual(2 * 64 * 400);
      expect(seen.maxModelledBytes).toBeGreaterThan(0);
    } finally {
      await reader.close();
    }
  });

  it('stays within a small RAM budget while tuning', async () => {
    const ramBudgetBytes = 4 * MIB;
    configureAutotune({ ramBudgetBytes, cpuBudget: 2 });
    const reader = await openText();
    try {
      const count = 20_000;
      const seen = await read(reader, count, 0);
      expectSame(seen.records, textRecords.slice(0, count));
      expect(seen.maxBoundBytes).toBeLessThanOrEqual(ramBudgetBytes / 4);
      expect(seen.maxModelledBytes).toBeLessThanOrEqual(ramBudgetBytes);
      // The native ring admits a compressed chunk on an estimate of its decoded size.
      expect(reader.prefetchStats?.peakBufferedBytes).toBeLessThanOrEqual(ramBudgetBytes / 4 + MIB);
    } finally {
      await reader.close();
    }
  }, 60_000);
});
