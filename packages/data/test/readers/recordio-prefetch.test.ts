import { mkdtemp, open, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '@edl/common';
import { type CompressorName, RecordIOError, RecordIOReader, RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RecordRange } from '../../src/protocols.js';
import { createDataReader, RecordIODataReader } from '../../src/readers/index.js';

let dir: string;
const files: string[] = [];
const written = new Map<string, Uint8Array[]>();
let corrupt: string;
/** Records of `corrupt` before its damaged chunk. */
let corruptGood: number;

function makeRecords(file: number, count: number): Uint8Array[] {
  const records: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const size = i % 13 === 0 ? 0 : 4 + ((i * 53 + file * 97) % 700);
    const record = new Uint8Array(size);
    for (let b = 0; b < size; b++) record[b] = (file * 29 + i * 11 + b) & 0xff;
    records.push(record);
  }
  return records;
}

async function write(name: string, records: Uint8Array[], compressor: CompressorName): Promise<string> {
  const path = join(dir, name);
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 3000 });
  for (const record of records) writer.write(record);
  writer.close();
  written.set(path, records);
  return path;
}

/** Random task ranges over the files, with repeats of one file and of one exact range. */
function randomTasks(seed: number, count: number): RecordRange[] {
  const next = mulberry32(seed);
  const tasks: RecordRange[] = [];
  for (let i = 0; i < count; i++) {
    const shardName = files[Math.floor(next() * files.length)] as string;
    const n = (written.get(shardName) as Uint8Array[]).length;
    const start = Math.floor(next() * n);
    const end = Math.min(n, start + Math.floor(next() * 300));
    tasks.push({ shardName, start, end });
    if (next() < 0.15) tasks.push({ shardName, start, end });
  }
  return tasks;
}

async function readAll(reader: RecordIODataReader, range: RecordRange): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const record of reader.readRecords(range)) out.push(record.slice());
  return out;
}

/** Where two record lists differ (deep equality of many byte arrays is slow in expect). */
function difference(a: Uint8Array[], b: Uint8Array[]): string | undefined {
  if (a.length !== b.length) return `${a.length} records instead of ${b.length}`;
  const at = a.findIndex((record, i) => Buffer.compare(record, b[i] as Uint8Array) !== 0);
  return at < 0 ? undefined : `record ${at} differs`;
}

/** `reader.prefetch(range)`, which a reader with read-ahead has. */
function announce(reader: RecordIODataReader, range: RecordRange): void {
  if (reader.prefetch === undefined) throw new Error('this reader cannot read ahead');
  reader.prefetch(range);
}

function expected(range: RecordRange): Uint8Array[] {
  return (written.get(range.shardName) as Uint8Array[]).slice(range.start, range.end);
}

/** What reading `range` does: the records before a failure, and the failure's code. */
async function outcome(reader: RecordIODataReader, range: RecordRange) {
  const records: Uint8Array[] = [];
  try {
    for await (const record of reader.readRecords(range)) records.push(record.slice());
    return { records, error: undefined };
  } catch (error) {
    expect(error).toBeInstanceOf(RecordIOError);
    const e = error as RecordIOError;
    return { records, error: { code: e.code, path: e.path, chunk: e.chunk } };
  }
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-rio-prefetch-'));
  files.push(await write('a.rio', makeRecords(0, 900), 'gzip'));
  files.push(await write('b.rio', makeRecords(1, 450), 'snappy'));
  files.push(await write('c.rio', makeRecords(2, 320), 'none'));
  corrupt = await write('bad.rio', makeRecords(3, 400), 'gzip');
  // Damage the payload of the third chunk: its checksum no longer matches.
  const reader = await RecordIOReader.open(corrupt);
  const chunk = reader.chunks[2];
  reader.close();
  if (chunk === undefined) throw new Error('bad.rio needs three chunks');
  corruptGood = chunk.firstRecord;
  const handle = await open(corrupt, 'r+');
  await handle.write(new Uint8Array([0xff, 0x00, 0xff]), 0, 3, chunk.offset + 30);
  await handle.close();
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('RecordIODataReader read-ahead (native prefetcher)', () => {
  it.each([0, 1, 2])(
    'yields the same records as the direct path for random task lists, %i threads',
    async (threads) => {
      const direct = await RecordIODataReader.open({ files, prefetch: false });
      for (const [seed, batchSize, maxBufferedBytes] of [
        [1, 64, 64 << 20],
        [2, 7, 16 << 10],
        [3, 1, 4 << 10],
      ] as const) {
        const reader = await RecordIODataReader.open({
          files,
          prefetch: { threads, batchSize, maxBufferedBytes, storedFiles: 'prefetch' },
        });
        try {
          const tasks = randomTasks(seed * 10 + threads, 25);
          // A worker: every task announced when received, read in order, the next ones announced meanwhile.
          announce(reader, tasks[0] as RecordRange);
          for (const [i, task] of tasks.entries()) {
            const after = tasks[i + 1];
            if (after !== undefined) announce(reader, after);
            const got = await readAll(reader, task);
            expect(difference(got, await readAll(direct, task))).toBeUndefined();
            expect(difference(got, expected(task))).toBeUndefined();
          }
          expect(reader.prefetchStats?.rangesEnqueued).toBe(tasks.filter((t) => t.end > t.start).length);
        } finally {
          await reader.close();
        }
      }
      await direct.close();
    },
    60_000,
  );

  it('reads files of stored chunks directly by default, once known, and the same records', async () => {
    const stored = files[2] as string; // c.rio: compressor none
    const gzip = files[0] as string;
    const direct = await RecordIODataReader.open({ files, prefetch: false });
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 2, batchSize: 16 } });
    const tasks: RecordRange[] = [];
    for (const shardName of [stored, gzip]) {
      for (let start = 0; start < 300; start += 50) tasks.push({ shardName, start, end: start + 50 });
    }
    for (const task of tasks) {
      announce(reader, task);
      expect(difference(await readAll(reader, task), await readAll(direct, task))).toBeUndefined();
    }
    // c.rio's ranges never reach the prefetcher, not even the first one, announced before the file
    // was open; the gzip file's ranges all go through it.
    expect(reader.prefetchStats?.rangesEnqueued).toBe(6);
    for (const r of [reader, direct]) await r.close();
  });

  it('starts no prefetcher thread for files of stored chunks; reads compressed ones announced before they were open ahead', async () => {
    const stored = files[2] as string;
    const gzip = files[0] as string;
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 2, batchSize: 16 } });
    const storedTasks = [0, 100, 200].map((start) => ({ shardName: stored, start, end: start + 100 }));
    for (const task of storedTasks) announce(reader, task);
    for (const task of storedTasks) expect(await readAll(reader, task)).toEqual(expected(task));
    expect(reader.prefetchStats).toBeUndefined();
    // A compressed file's range, announced before anything opened the file: queued once it is.
    const ahead = { shardName: gzip, start: 10, end: 200 };
    announce(reader, ahead);
    expect(reader.prefetchStats).toBeUndefined();
    await expect.poll(() => reader.prefetchStats?.rangesEnqueued, { timeout: 5000 }).toBe(1);
    expect(await readAll(reader, ahead)).toEqual(expected(ahead));
    expect(reader.prefetchStats?.rangesEnqueued).toBe(1);
    await reader.close();
  });

  it('serves ranges read out of order and interleaved, announced or not', async () => {
    for (const threads of [0, 2]) {
      const reader = await RecordIODataReader.open({
        files,
        prefetch: { threads, batchSize: 16, maxBufferedBytes: 1 << 20 },
      });
      const tasks = randomTasks(40 + threads, 12);
      for (const task of tasks) announce(reader, task);
      // Last announced first, then the rest two at a time, stepping the two iterators alternately.
      const order = [...tasks.keys()].reverse();
      const last = order.shift() as number;
      expect(await readAll(reader, tasks[last] as RecordRange)).toEqual(expected(tasks[last] as RecordRange));
      while (order.length > 0) {
        const pair = order.splice(0, 2).map((i) => tasks[i] as RecordRange);
        const iterators = pair.map((task) => reader.readRecords(task)[Symbol.asyncIterator]());
        const got: Uint8Array[][] = pair.map(() => []);
        let open = pair.length;
        while (open > 0) {
          open = 0;
          for (const [k, iterator] of iterators.entries()) {
            const result = await iterator.next();
            if (!result.done) {
              (got[k] as Uint8Array[]).push(result.value.slice());
              open++;
            }
          }
        }
        for (const [k, task] of pair.entries()) expect(got[k]).toEqual(expected(task));
      }
      // Not announced: queued on demand.
      const extra = { shardName: files[2] as string, start: 5, end: 300 };
      expect(await readAll(reader, extra)).toEqual(expected(extra));
      await reader.close();
    }
  }, 60_000);

  it('forgets announced ranges it must pull past beyond maxBufferedBytes, and re-reads them when asked', async () => {
    const reader = await RecordIODataReader.open({
      files,
      // Every file through the prefetcher, c.rio (stored chunks) too: announced ranges are queued at once.
      prefetch: { threads: 1, batchSize: 8, maxBufferedBytes: 8 << 10, storedFiles: 'prefetch' },
    });
    const never = { shardName: files[0] as string, start: 0, end: 900 };
    const later = { shardName: files[1] as string, start: 0, end: 450 };
    const first = { shardName: files[2] as string, start: 0, end: 320 };
    announce(reader, never);
    announce(reader, later);
    announce(reader, first);
    expect(await readAll(reader, first)).toEqual(expected(first));
    expect(await readAll(reader, later)).toEqual(expected(later));
    // `never` was forced out (its 300+ KiB exceed the bound): read now, it is queued again.
    expect(await readAll(reader, never)).toEqual(expected(never));
    expect(reader.prefetchStats?.rangesEnqueued).toBeGreaterThanOrEqual(4);
    await reader.close();
  }, 30_000);

  it('decodes a chunk cut by tasks once and yields what readSync does, record by record', async () => {
    // Tasks of 37 records over chunks of about 3000 bytes (roughly 8 records): most tasks cut a
    // chunk at both ends, and the chunk a task ends in is where the next one starts.
    for (const shardName of [files[0], files[1], files[2]] as string[]) {
      const file = await RecordIOReader.open(shardName);
      const n = file.numRecords;
      const batch = file.readSync(0, n);
      const want = [...batch].map((record) => record.slice());
      const decodedOnce = want.reduce((sum, record) => sum + 4 + record.length, 0) + 8 * n;
      batch.release();
      file.close();
      for (const threads of [0, 2]) {
        const reader = await RecordIODataReader.open({
          files,
          prefetch: { threads, batchSize: 10, storedFiles: 'prefetch' },
        });
        const tasks: RecordRange[] = [];
        for (let start = 0; start < n; start += 37)
          tasks.push({ shardName, start, end: Math.min(n, start + 37) });
        announce(reader, tasks[0] as RecordRange);
        for (const [i, task] of tasks.entries()) {
          const after = tasks[i + 1];
          if (after !== undefined) announce(reader, after);
          const got = await readAll(reader, task);
          expect(difference(got, want.slice(task.start, task.end))).toBeUndefined();
        }
        const stats = reader.prefetchStats;
        // Each chunk decoded once (its records with their 4-byte lengths, plus 8 bytes of bounds
        // per record): the chunks tasks share came from the chunk carried over.
        expect(stats?.chunksCarried).toBeGreaterThan(tasks.length / 2);
        expect(stats?.decodedBytes).toBe(decodedOnce);
        await reader.close();
      }
    }
  }, 60_000);

  it('reports a corrupt chunk in its own task only, as the direct path does', async () => {
    const bad = { shardName: corrupt, start: 0, end: 400 };
    const tail = { shardName: corrupt, start: 0, end: corruptGood };
    const direct = await RecordIODataReader.open({ files: [...files, corrupt], prefetch: false });
    const want = await outcome(direct, bad);
    expect(want.error?.code).toBe('CHECKSUM');
    expect(want.records).toEqual(expected(bad).slice(0, corruptGood));
    for (const threads of [0, 1, 2]) {
      const reader = await RecordIODataReader.open({
        files: [...files, corrupt],
        prefetch: { threads, batchSize: 10 },
      });
      const tasks = [
        { shardName: files[0] as string, start: 100, end: 400 },
        bad,
        { shardName: files[1] as string, start: 0, end: 450 },
        tail,
        bad,
      ];
      for (const task of tasks) announce(reader, task);
      // In order, then the second bad range after the good ones that follow it.
      expect(await outcome(reader, tasks[0] as RecordRange)).toEqual({
        records: expected(tasks[0] as RecordRange),
        error: undefined,
      });
      expect(await outcome(reader, bad)).toEqual(want);
      expect(await outcome(reader, tasks[2] as RecordRange)).toEqual({
        records: expected(tasks[2] as RecordRange),
        error: undefined,
      });
      expect(await outcome(reader, tail)).toEqual({ records: expected(tail), error: undefined });
      expect(await outcome(reader, bad)).toEqual(want);
      await reader.close();
    }
    // Out of order: the good range announced after a bad one is read first.
    const reader = await RecordIODataReader.open({ files: [...files, corrupt], prefetch: { threads: 2 } });
    const good = { shardName: files[2] as string, start: 0, end: 320 };
    announce(reader, bad);
    announce(reader, good);
    expect(await outcome(reader, good)).toEqual({ records: expected(good), error: undefined });
    expect(await outcome(reader, bad)).toEqual(want);
    await reader.close();
    await direct.close();
  }, 60_000);

  it('drops the rest of a range left early, and checks ranges as the direct path does', async () => {
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 2, batchSize: 16 } });
    const whole = { shardName: files[0] as string, start: 0, end: 900 };
    const next = { shardName: files[1] as string, start: 10, end: 40 };
    announce(reader, whole);
    announce(reader, next);
    let seen = 0;
    for await (const record of reader.readRecords(whole)) {
      expect(record).toEqual(expected(whole)[seen]);
      if (++seen === 100) break;
    }
    expect(await readAll(reader, next)).toEqual(expected(next));
    // Bad ranges are not announced (prefetch never throws); readRecords reports them.
    const outside = { shardName: files[1] as string, start: 10, end: 451 };
    const unknown = { shardName: join(dir, 'nope.rio'), start: 0, end: 1 };
    announce(reader, outside);
    announce(reader, unknown);
    announce(reader, { shardName: '', start: -1, end: 0 } as RecordRange);
    await expect(readAll(reader, outside)).rejects.toMatchObject({ code: 'OUT_OF_RANGE' });
    await expect(readAll(reader, unknown)).rejects.toMatchObject({ code: 'UNKNOWN_SHARD' });
    expect(await readAll(reader, { shardName: files[1] as string, start: 7, end: 7 })).toEqual([]);
    await reader.close();
  }, 30_000);

  it('close() stops the prefetcher, ends a read in progress, and reads nothing after', async () => {
    const reader = await RecordIODataReader.open({
      files,
      prefetch: { threads: 1, batchSize: 4, maxBufferedBytes: 4096 },
    });
    const range = { shardName: files[0] as string, start: 0, end: 900 };
    announce(reader, range);
    const iterator = reader.readRecords(range)[Symbol.asyncIterator]();
    expect((await iterator.next()).value).toEqual(expected(range)[0]);
    await reader.close();
    const rest = (async () => {
      for (;;) if ((await iterator.next()).done) return;
    })();
    await expect(rest).rejects.toMatchObject({ code: 'CLOSED' });
    await expect(readAll(reader, range)).rejects.toMatchObject({ code: 'CLOSED' });
    reader.prefetch?.(range); // no effect, no throw
  });

  it('describes its prefetch options, refuses bad ones, and keeps describe() unchanged by default', async () => {
    const reader = await RecordIODataReader.open({ files, prefetch: { threads: 1, batchSize: 32 } });
    expect(reader.describe().params.prefetch).toEqual({ threads: 1, batchSize: 32 });
    const again = (await createDataReader(reader.describe())) as RecordIODataReader;
    expect(again.describe()).toEqual(reader.describe());
    const off = await RecordIODataReader.open({ files, prefetch: false });
    expect(off.describe().params.prefetch).toBe(false);
    expect(off.prefetch).toBeUndefined(); // cannot read ahead: callers do not announce
    expect(off.prefetchStats).toBeUndefined();
    const plain = await RecordIODataReader.open({ files });
    expect('prefetch' in plain.describe().params).toBe(false);
    await expect(RecordIODataReader.open({ files, prefetch: { thread: 2 } as never })).rejects.toThrow(
      'Expected one of threads, batchSize, maxBufferedBytes, storedFiles for a key of options.prefetch but received "thread"',
    );
    await expect(
      RecordIODataReader.open({ files, prefetch: { storedFiles: 'never' } as never }),
    ).rejects.toThrow(
      `Expected 'direct' or 'prefetch' for options.prefetch.storedFiles but received "never"`,
    );
    await expect(RecordIODataReader.open({ files, prefetch: { threads: -1 } })).rejects.toThrow(RangeError);
    for (const r of [reader, again, off, plain]) await r.close();
  });
});
