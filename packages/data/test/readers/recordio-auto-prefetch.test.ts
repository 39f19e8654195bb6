/** `prefetch: { threads: 'auto', maxBufferedBytes: 'auto' }` of the RecordIO reader, on real gzip files. */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
let dir: string;
let file: string;
const records: Uint8Array[] = [];

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
});
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
    const reservation = autotuneSnapshot().stages.find((s) => s.label === 'RecordIO read-ahead');
    expect(reservation).toMatchObject({ parallelism: 2, bufferSize: 1 });
    expect(autotuneSnapshot().modelledBytes).toBeGreaterThanOrEqual(2 * MIB);
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
