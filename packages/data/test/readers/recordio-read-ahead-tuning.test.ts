/**
 * The RecordIO reader's `'auto'` read-ahead tuned while it reads, on real gzip files through the
 * native prefetcher: the dataset tuner activates a second decoding thread for a fast consumer,
 * keeps one for a slow one, and neither changes the records, their order, or the budgets.
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
const RECORDS = 60_000;
const LABEL = 'RecordIO read-ahead';
let dir: string;
let file: string;
const records: Uint8Array[] = [];

beforeAll(async () => {
  const random = mulberry32(11);
  dir = await mkdtemp(join(tmpdir(), 'edl-read-ahead-tuning-'));
  file = join(dir, 'part-0.rio');
  const writer = await RecordIOWriter.create(file, { compressor: 'gzip', maxChunkBytes: 32 * 1024 });
  const words = ['alpha', 'beta', 'gamma', 'delta', 'epsilon', 'zeta', 'eta', 'theta'];
  for (let i = 0; i < RECORDS; i++) {
    // Text that compresses: inflating it is real work for the decoding threads.
    let text = `${i}:`;
    while (text.length < 400) text += `${words[Math.floor(random() * words.length)]} `;
    const record = new TextEncoder().encode(text);
    records.push(record);
    writer.write(record);
  }
  writer.close();
}, 60_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});
afterEach(() => configureAutotune({ ramBudgetBytes: defaultDataRamBudget(), cpuBudget: defaultCpuBudget() }));

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
  for await (const record of reader.readRecords({ shardName: file, start: 0, end: count })) {
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
  expect(got.every((r, i) => Buffer.compare(r, records[i] as Uint8Array) === 0)).toBe(true);
}

describe("RecordIO reader 'auto' read-ahead, tuned while reading", () => {
  it.skipIf(availableParallelism() < 2)(
    'activates a second decoding thread for a fast consumer, without changing the records or their order',
    async () => {
      const ramBudgetBytes = 64 * MIB;
      configureAutotune({ ramBudgetBytes, cpuBudget: 2 });
      const reader = await RecordIODataReader.open({
        files: [file],
        prefetch: { threads: 'auto', maxBufferedBytes: 'auto', storedFiles: 'prefetch', batchSize: 64 },
      });
      try {
        const seen = await read(reader, RECORDS, 0);
        expectSameRecords(seen.records, RECORDS);
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
    const reader = await RecordIODataReader.open({
      files: [file],
      prefetch: { threads: 'auto', maxBufferedBytes: 'auto', storedFiles: 'prefetch', batchSize: 64 },
    });
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
    const reader = await RecordIODataReader.open({
      files: [file],
      prefetch: { threads: 'auto', maxBufferedBytes: 'auto', storedFiles: 'prefetch', batchSize: 64 },
    });
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
