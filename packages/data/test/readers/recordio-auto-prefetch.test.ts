/**
 * `prefetch: { threads: 'auto', maxBufferedBytes: 'auto' }` of the RecordIO reader, on real gzip
 * files through the native prefetcher, tuned while it reads: the dataset tuner activates a second
 * decoding thread for a fast consumer, keeps one for a slow one, and neither changes the records,
 * their order, or the budgets.
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
import { RecordIODataReader } from '../../src/readers/index.js';

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
    expect(autotuneSnapshot().modelledBytes).toBeGreaterThan(0);
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

/** A reader of the text file with both read-ahead values 'auto', in batches of 64 records. */
function openText(): Promise<RecordIODataReader> {
  return RecordIODataReader.open({
    files: [textFile],
    prefetch: { threads: 'auto', maxBufferedBytes: 'auto', storedFiles: 'prefetch', batchSize: 64 },
  });
}

interface Observed {
  readonly records: Uint8Array[];
  /** The most threads the prefetcher had active at any batch boundary, and the read-ahead bound. */
  readonly maxActiveThreads: number;
  readonly maxBoundBytes: number;
  readonly maxModelledBytes: number;
}

/** Reads `count` records, with `perBatchMs` of consumer time per 64 records (0: as fast as it can). */
async function read(reader: RecordIODataReader, count: number, perBatchMs: number): Promise<Observed> {
  const out: Uint8Array[] = [];
  let maxActiveThreads = 0;
  let maxBoundBytes = 0;
  let maxModelledBytes = 0;
  for await (const record of reader.readRecords({ shardName: textFile, start: 0, end: count })) {
    out.push(record.slice());
    if (out.length % 64 !== 0) continue;
    const stats = reader.prefetchStats;
    maxActiveThreads = Math.max(maxActiveThreads, stats?.activeThreads ?? 0);
    maxBoundBytes = Math.max(maxBoundBytes, stats?.maxBufferedBytes ?? 0);
    maxModelledBytes = Math.max(maxModelledBytes, autotuneSnapshot().modelledBytes);
    if (perBatchMs > 0) await sleep(perBatchMs);
  }
  return { records: out, maxActiveThreads, maxBoundBytes, maxModelledBytes };
}

function expectSameRecords(got: readonly Uint8Array[], count: number): void {
  expect(got.length).toBe(count);
  expect(got.every((r, i) => Buffer.compare(r, textRecords[i] as Uint8Array) === 0)).toBe(true);
}

describe("RecordIO reader 'auto' read-ahead, tuned while reading", () => {
  it.skipIf(availableParallelism() < 2)(
    'activates a second decoding thread for a fast consumer, without changing the records or their order',
    async () => {
      const ramBudgetBytes = 64 * MIB;
      configureAutotune({ ramBudgetBytes, cpuBudget: 2 });
      const reader = await openText();
      try {
        const seen = await read(reader, TEXT_RECORDS, 0);
        expectSameRecords(seen.records, TEXT_RECORDS);
        expect(seen.maxActiveThreads).toBe(2);
        // Never past the budgets: the ring's bound within its quarter of RAM, the model within all.
        expect(seen.maxBoundBytes).toBeLessThanOrEqual(ramBudgetBytes / 4);
        expect(seen.maxModelledBytes).toBeLessThanOrEqual(ramBudgetBytes);
        expect(reader.prefetchStats?.peakBufferedBytes).toBeLessThanOrEqual(ramBudgetBytes / 4 + 256 * 1024);
        // The chosen values are where /metrics and --stats read the tuned ones.
        const stage = autotuneSnapshot().stages.find((s) => s.label === LABEL);
        expect(stage?.parallelism).toBe(reader.prefetchStats?.activeThreads);
        expect(stage?.workPerSecond).toBeGreaterThan(0);
      } finally {
        await reader.close();
      }
      expect(autotuneSnapshot().stages.find((s) => s.label === LABEL)).toBeUndefined();
      expect(autotuneSnapshot().endedStages.some((s) => s.label === LABEL)).toBe(true);
    },
    60_000,
  );

  it('keeps one thread for a slow consumer, and the same records in the same order', async () => {
    configureAutotune({ ramBudgetBytes: 64 * MIB, cpuBudget: 2 });
    const reader = await openText();
    try {
      // 5 ms per batch of 64 records: far longer than decoding a batch of ~400-byte records.
      const count = 300 * 64;
      const seen = await read(reader, count, 5);
      expectSameRecords(seen.records, count);
      expect(seen.maxActiveThreads).toBe(1);
    } finally {
      await reader.close();
    }
  }, 60_000);

  it('stays within a small RAM budget while tuning', async () => {
    const ramBudgetBytes = 4 * MIB;
    configureAutotune({ ramBudgetBytes, cpuBudget: 2 });
    const reader = await openText();
    try {
      const count = 20_000;
      const seen = await read(reader, count, 0);
      expectSameRecords(seen.records, count);
      expect(seen.maxBoundBytes).toBeLessThanOrEqual(ramBudgetBytes / 4);
      expect(seen.maxModelledBytes).toBeLessThanOrEqual(ramBudgetBytes);
      // The native ring admits a compressed chunk on an estimate of its decoded size.
      expect(reader.prefetchStats?.peakBufferedBytes).toBeLessThanOrEqual(ramBudgetBytes / 4 + 256 * 1024);
    } finally {
      await reader.close();
    }
  }, 60_000);
});
