import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CompressorName, RecordIOError, RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordIODataReader } from '../../src/readers/index.js';

let dir: string;
const written = new Map<string, Uint8Array[]>();

/** Records of varied sizes (empty ones too) whose bytes identify file and index. */
function makeRecords(file: number, count: number): Uint8Array[] {
  const records: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const size = i % 11 === 0 ? 0 : 8 + ((i * 37 + file * 101) % 900);
    const record = new Uint8Array(size);
    for (let b = 0; b < size; b++) record[b] = (file * 31 + i * 7 + b) & 0xff;
    records.push(record);
  }
  return records;
}

async function writeRecordIO(path: string, records: Uint8Array[], compressor: CompressorName): Promise<void> {
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 4096 });
  for (const record of records) writer.write(record);
  writer.close();
  written.set(path, records);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-rio-'));
  const data = join(dir, 'data');
  await mkdir(data);
  const specs: [string, number, CompressorName][] = [
    ['part-10.rio', 120, 'gzip'],
    ['part-02.rio', 333, 'snappy'],
    ['part-1.recordio', 57, 'none'],
    ['empty.rio', 0, 'none'],
    ['Zeta.rio', 1, 'snappy'],
  ];
  for (const [i, [name, count, compressor]] of specs.entries()) {
    await writeRecordIO(join(data, name), makeRecords(i, count), compressor);
  }
  await writeFile(join(data, '.hidden'), 'not a RecordIO file');
  await mkdir(join(data, 'subdir'));
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function drain(reader: RecordIODataReader, shardName: string, start: number, end: number) {
  const out: Uint8Array[] = [];
  for await (const record of reader.readRecords({ shardName, start, end })) out.push(record);
  return out;
}

describe('RecordIODataReader', () => {
  it('makes one shard per file, in sorted order, with counts from the native index', async () => {
    const data = join(dir, 'data');
    const reader = await RecordIODataReader.open({ dataDir: data });
    try {
      expect(reader.files).toEqual(
        ['Zeta.rio', 'empty.rio', 'part-02.rio', 'part-1.recordio', 'part-10.rio'].map((n) => join(data, n)),
      );
      expect(await reader.createShards()).toEqual([
        { name: join(data, 'Zeta.rio'), start: 0, count: 1 },
        { name: join(data, 'part-02.rio'), start: 0, count: 333 },
        { name: join(data, 'part-1.recordio'), start: 0, count: 57 },
        { name: join(data, 'part-10.rio'), start: 0, count: 120 },
      ]);
      expect(reader.metadata).toEqual({ format: 'recordio', files: 5 });
    } finally {
      await reader.close();
    }
  });

  it('reads every record of every task, reusing one open file per shard', async () => {
    const reader = await RecordIODataReader.open({ dataDir: join(dir, 'data'), maxOpenFiles: 8 });
    try {
      const shards = await reader.createShards();
      const openedAfterShards = reader.openFiles.opened;
      expect(openedAfterShards).toBe(5);
      for (const shard of shards) {
        const got: Uint8Array[] = [];
        for (let start = 0; start < shard.count; start += 13) {
          got.push(...(await drain(reader, shard.name, start, Math.min(shard.count, start + 13))));
        }
        expect(got.map((r) => Buffer.from(r).toString('hex'))).toEqual(
          written.get(shard.name)!.map((r) => Buffer.from(r).toString('hex')),
        );
      }
      // Every task of a shard reused the file opened for createShards.
      expect(reader.openFiles).toEqual({ open: 5, opened: 5 });
    } finally {
      await reader.close();
    }
    expect(reader.openFiles.open).toBe(0);
  });

  it('keeps at most maxOpenFiles files open while tasks of many shards interleave', async () => {
    const reader = await RecordIODataReader.open({
      files: [...written.keys()].filter((p) => written.get(p)!.length > 0).reverse(),
      maxOpenFiles: 2,
    });
    try {
      const shards = await reader.createShards();
      expect(shards.map((s) => s.name)).toEqual([...shards.map((s) => s.name)].sort());
      const got = new Map<string, Uint8Array[]>(shards.map((s) => [s.name, []]));
      let open = 0;
      for (let start = 0; start < 333; start += 50) {
        for (const shard of shards) {
          if (start >= shard.count) continue;
          got
            .get(shard.name)!
            .push(...(await drain(reader, shard.name, start, Math.min(shard.count, start + 50))));
          open = Math.max(open, reader.openFiles.open);
        }
      }
      expect(open).toBe(2);
      for (const shard of shards) expect(got.get(shard.name)).toEqual(written.get(shard.name));
    } finally {
      await reader.close();
    }
  });

  it('rejects unknown shards, ranges past the end and non-RecordIO files', async () => {
    const data = join(dir, 'data');
    const reader = await RecordIODataReader.open({ dataDir: data });
    try {
      await expect(drain(reader, '/elsewhere/x.rio', 0, 1)).rejects.toThrow(
        `UNKNOWN_SHARD: shard "/elsewhere/x.rio" is not one of the files of this reader (${data})`,
      );
      await expect(drain(reader, join(data, 'Zeta.rio'), 0, 2)).rejects.toThrow(
        `OUT_OF_RANGE: records [0, 2) of ${join(data, 'Zeta.rio')}, which has 1 records`,
      );
      await expect(drain(reader, join(data, 'Zeta.rio'), 2, 1)).rejects.toThrow(RangeError);
    } finally {
      await reader.close();
    }
    const junk = join(dir, 'junk');
    await mkdir(junk);
    await writeFile(join(junk, 'a.rio'), 'this is not RecordIO at all, not even close');
    const bad = await RecordIODataReader.open({ dataDir: junk });
    const error = await bad.createShards().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RecordIOError);
    expect(error).toMatchObject({ path: join(junk, 'a.rio') });
    await bad.close();
    await expect(RecordIODataReader.open({ dataDir: join(dir, 'none') })).rejects.toMatchObject({
      code: 'IO',
    });
    await mkdir(join(dir, 'emptydir'));
    await expect(RecordIODataReader.open({ dataDir: join(dir, 'emptydir') })).rejects.toThrow(
      `NO_FILES: ${join(dir, 'emptydir')} holds no RecordIO file`,
    );
    await expect(RecordIODataReader.open({ dataDir: data, files: [] } as never)).rejects.toThrow(
      /^Expected exactly one of dataDir and files for options but received/,
    );
  });
});
