import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { registerByteSource, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../../storage/test/support/s3rver-process.js';
import type { RecordRange } from '../../src/protocols.js';
import { createDataReader, TextDataReader } from '../../src/readers/index.js';

// Reads CSV and plain-text objects from a real S3 API server (npm's s3rver, started as a process)
// and compares every record, task by task, with a local read of the same file. Small pieces and
// a small index stride make tasks span several ranged GETs and start inside index blocks.

const BUCKET = 'remote-text';
const RECORDS_PER_TASK = 97;
const REMOTE = { partBytes: 4096 } as const;

let s3: S3rverProcess;
let source: S3ByteSource;
let scratch: string;
let csvPath: string;
let linesPath: string;

/** A CSV with a header, quoted fields holding commas, quotes and newlines, and CRLF line ends. */
function csvText(rows: number): string {
  const lines = ['id,name,score'];
  for (let i = 0; i < rows; i++) {
    const name = i % 7 === 0 ? `"multi\nline, ""${i}"""` : `name-${'x'.repeat(i % 40)}`;
    lines.push(`${i},${name},${(i * 0.25).toFixed(2)}`);
  }
  return `\ufeff${lines.join('\r\n')}\r\n`;
}

/** The tasks of `reader`'s shards, of RECORDS_PER_TASK records. */
async function tasksOf(reader: TextDataReader): Promise<RecordRange[]> {
  const tasks: RecordRange[] = [];
  for (const shard of await reader.createShards()) {
    for (let start = shard.start; start < shard.start + shard.count; start += RECORDS_PER_TASK) {
      tasks.push({
        shardName: shard.name,
        start,
        end: Math.min(start + RECORDS_PER_TASK, shard.start + shard.count),
      });
    }
  }
  return tasks;
}

/** Every record of `reader`, read task by task over its shards, each task announced one ahead. */
async function readAll(reader: TextDataReader): Promise<unknown[]> {
  const tasks = await tasksOf(reader);
  const records: unknown[] = [];
  for (const [i, task] of tasks.entries()) {
    const next = tasks[i + 1];
    if (next !== undefined) reader.prefetch?.(next);
    for await (const record of reader.readRecords(task)) records.push(record);
  }
  return records;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edl-remote-text-'));
  csvPath = join(scratch, 'table.csv');
  linesPath = join(scratch, 'notes.txt');
  const csv = csvText(3000);
  // The last line has no line end: the scan ends it at the object's end.
  const lines = Array.from({ length: 2500 }, (_, i) =>
    i % 11 === 0 ? '' : `line ${i} ${'y'.repeat(i % 60)}`,
  ).join('\n');
  await writeFile(csvPath, csv);
  await writeFile(linesPath, lines);
  s3 = await startS3rver();
  await s3.createBucket(BUCKET);
  await s3.put(BUCKET, 'data/table.csv', Buffer.from(csv));
  await s3.put(BUCKET, 'data/notes.txt', Buffer.from(lines));
  source = new S3ByteSource({
    endpoint: s3.endpoint,
    credentials: S3RVER_CREDENTIALS,
    baseDelayMs: 5,
    maxDelayMs: 50,
  });
  registerByteSource('s3', () => source);
}, 60_000);

afterAll(async () => {
  registerByteSource('s3', () => new S3ByteSource());
  await source?.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe('the text reader over s3://', () => {
  it.each([
    ['a CSV with a header and typed columns', 'table.csv', { header: true, inferTypes: true }],
    ['a plain-text file', 'notes.txt', {}],
  ] as const)('reads %s with records identical to the local read', async (_name, file, options) => {
    const common = { ...options, recordsPerShard: 700, indexStride: 16 };
    const local = await TextDataReader.open({ path: join(scratch, file), ...common });
    const cacheDir = await mkdtemp(join(scratch, 'cache-'));
    const remote = await TextDataReader.open({
      path: `s3://${BUCKET}/data/${file}`,
      ...common,
      remote: { ...REMOTE, indexCacheDir: cacheDir },
    });
    expect(remote.metadata.columns).toEqual(local.metadata.columns);
    const expected = await readAll(local);
    expect(expected.length).toBeGreaterThan(2000);
    expect(await readAll(remote)).toEqual(expected);
    const stats = remote.remoteStats;
    expect(stats?.index.origin).toBe('header-walk');
    // One streaming pass over the object for the index, in pieces of partBytes.
    const size = (await source.stat(`s3://${BUCKET}/data/${file}`)).size;
    expect(stats?.index.requests).toBe(Math.ceil(size / REMOTE.partBytes));
    // The reads after indexing (their first pieces fetched ahead) fetch each task's index blocks
    // once: at most a block of records more on each side of a task, plus the open's first records.
    expect(stats?.dataBytes).toBeGreaterThanOrEqual(size - 3);
    expect(stats?.dataBytes).toBeLessThan(
      size * (1 + (2 * common.indexStride) / RECORDS_PER_TASK) + 2 * REMOTE.partBytes,
    );
    expect(await readdir(cacheDir)).toHaveLength(1);
    expect(local.remoteStats).toBeUndefined();
    // A local file is read when asked: nothing to announce, so a worker holds no task ahead for it.
    expect(local.prefetch).toBeUndefined();
    expect(remote.prefetch).toBeTypeOf('function');
  });

  it('finds the index in the cache the next time: no index request, the same records', async () => {
    const location = `s3://${BUCKET}/data/table.csv`;
    const cacheDir = await mkdtemp(join(scratch, 'cache-'));
    const options = {
      header: true,
      recordsPerShard: 700,
      indexStride: 16,
      remote: { ...REMOTE, indexCacheDir: cacheDir },
    };
    const first = await TextDataReader.open({ path: location, ...options });
    const records = await readAll(first);
    const second = await TextDataReader.open({ path: location, ...options });
    const before = source.stats.snapshot().requests;
    const shards = await second.createShards();
    expect(source.stats.snapshot().requests).toBe(before);
    expect(shards).toEqual(await first.createShards());
    expect(second.remoteStats?.index).toEqual({ origin: 'cache', requests: 0 });
    expect(await readAll(second)).toEqual(records);
    // Other options index the file differently: they do not take this index.
    const otherStride = await TextDataReader.open({ path: location, ...options, indexStride: 32 });
    await otherStride.recordCount();
    expect(otherStride.remoteStats?.index.origin).toBe('header-walk');
  });

  it('holds first pieces of announced tasks within readAheadBytes, however many are announced, and reads the same records', async () => {
    const options = { header: true, recordsPerShard: 700, indexStride: 16 };
    const readAheadBytes = 3 * REMOTE.partBytes;
    const reader = await TextDataReader.open({
      path: `s3://${BUCKET}/data/table.csv`,
      ...options,
      remote: { ...REMOTE, readAheadBytes, indexCacheDir: await mkdtemp(join(scratch, 'cache-')) },
    });
    const tasks = await tasksOf(reader);
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    // Every task announced at once: the first pieces fetched stop at the budget.
    for (const task of tasks) reader.prefetch?.(task);
    await settle();
    const held = reader.readAheadBudget?.();
    expect(held?.budgetBytes).toBe(readAheadBytes);
    expect(held?.announcedBytes).toBeGreaterThan(REMOTE.partBytes);
    expect(held?.announcedBytes).toBeLessThanOrEqual(readAheadBytes);
    const records: unknown[] = [];
    for (const task of tasks) for await (const record of reader.readRecords(task)) records.push(record);
    const local = await TextDataReader.open({ path: csvPath, ...options });
    expect(records).toEqual(await readAll(local));
    // Nothing is left held, and no byte was fetched twice (a piece is fetched ahead or by its read).
    expect(reader.readAheadBudget?.().announcedBytes).toBe(0);
    const size = (await source.stat(`s3://${BUCKET}/data/table.csv`)).size;
    expect(reader.remoteStats?.dataBytes).toBeLessThan(
      size * (1 + (2 * options.indexStride) / RECORDS_PER_TASK) + 2 * REMOTE.partBytes,
    );
    // A read past announced tasks gives their pieces up: reads come in announce order.
    const [first, second, third] = tasks;
    for (const task of [first, second, third]) if (task !== undefined) reader.prefetch?.(task);
    await settle();
    expect(reader.readAheadBudget?.().announcedBytes).toBeGreaterThan(0);
    for await (const _ of reader.readRecords(third as RecordRange)) {
      // drain
    }
    expect(reader.readAheadBudget?.().announcedBytes).toBe(0);
    // A local file has no budget: a worker holds one task ahead for it.
    expect(local.readAheadBudget).toBeUndefined();
  });

  it('createDataReader takes the URL and its describe() re-creates a remote reader', async () => {
    const cacheDir = await mkdtemp(join(scratch, 'cache-'));
    const reader = await createDataReader(`s3://${BUCKET}/data/notes.txt`, {
      indexStride: 16,
      remote: { ...REMOTE, indexCacheDir: cacheDir },
    });
    expect(reader).toBeInstanceOf(TextDataReader);
    const again = (await createDataReader(reader.describe())) as TextDataReader;
    expect(again.describe()).toEqual(reader.describe());
    const local = await TextDataReader.open({ path: linesPath, indexStride: 16 });
    expect(await readAll(again)).toEqual(await readAll(local));
  });

  it('a replaced object fails the read, naming the object', async () => {
    const original = csvText(400);
    await s3.put(BUCKET, 'replaced/table.csv', Buffer.from(original));
    const reader = await TextDataReader.open({
      path: `s3://${BUCKET}/replaced/table.csv`,
      header: true,
      remote: { ...REMOTE, indexCacheDir: await mkdtemp(join(scratch, 'cache-')) },
    });
    const [shard] = await reader.createShards();
    // The same size, other bytes.
    await s3.put(BUCKET, 'replaced/table.csv', Buffer.from(original.replace('name-x', 'name-z')));
    const read = async (): Promise<void> => {
      for await (const _ of reader.readRecords({ shardName: shard?.name ?? '', start: 0, end: 10 })) {
        // drain
      }
    };
    await expect(read()).rejects.toMatchObject({
      code: 'CHANGED',
      message: expect.stringContaining(`s3://${BUCKET}/replaced/table.csv`),
    });
  });
});
