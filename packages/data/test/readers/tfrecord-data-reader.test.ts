import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TFRecordError, TFRecordWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TFRecordDataSource } from '../../src/dataset/index.js';
import type { DataReader } from '../../src/protocols.js';
import { createDataReader, TFRecordDataReader } from '../../src/readers/index.js';

let dir: string;
const text = (r: Uint8Array) => Buffer.from(r).toString();

async function writeFileOf(path: string, records: string[], compression: 'none' | 'gzip' | 'zlib') {
  const writer = TFRecordWriter.create(path, { compression });
  for (const r of records) writer.write(r);
  await writer.close();
}

const recordsOf = (name: string, n: number) => Array.from({ length: n }, (_, i) => `${name}:${i}`);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-tfrecord-reader-'));
  await mkdir(join(dir, 'tf'));
  await writeFileOf(join(dir, 'tf', 'b.tfrecord'), recordsOf('b', 500), 'none');
  await writeFileOf(join(dir, 'tf', 'a.tfrecords.gz'), recordsOf('a', 300), 'gzip');
  await writeFileOf(join(dir, 'tf', 'c.tfrec'), recordsOf('c', 40), 'zlib');
  await writeFile(join(dir, 'tf', '.hidden'), 'not a record file');
  await mkdir(join(dir, 'bad'));
  const bad = join(dir, 'bad', 'x.tfrecord');
  await writeFileOf(bad, recordsOf('x', 10), 'none');
  const bytes = Buffer.from(await import('node:fs/promises').then((fs) => fs.readFile(bad)));
  await writeFile(bad, bytes.subarray(0, bytes.length - 3));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAllByTasks(reader: DataReader<Uint8Array>, taskSize: number, batches: boolean) {
  const out: string[] = [];
  for (const s of await reader.createShards()) {
    for (let start = s.start; start < s.start + s.count; start += taskSize) {
      const range = { shardName: s.name, start, end: Math.min(start + taskSize, s.start + s.count) };
      if (batches) {
        for await (const batch of reader.readBatches?.(range) ?? []) {
          for (let i = 0; i < batch.length; i++) out.push(text(batch.get(i)));
          batch.release();
        }
      } else {
        for await (const r of reader.readRecords(range)) out.push(text(r));
      }
    }
  }
  return out;
}

describe('TFRecordDataReader', () => {
  it('createDataReader picks it for a directory of TFRecord files; shards per file, sorted', async () => {
    const reader = (await createDataReader(join(dir, 'tf'))) as TFRecordDataReader;
    expect(reader).toBeInstanceOf(TFRecordDataReader);
    const shards = await reader.createShards();
    expect(shards.map((s) => [s.name.slice(dir.length), s.count])).toEqual([
      ['/tf/a.tfrecords.gz', 300],
      ['/tf/b.tfrecord', 500],
      ['/tf/c.tfrec', 40],
    ]);
    const expected = [...recordsOf('a', 300), ...recordsOf('b', 500), ...recordsOf('c', 40)];
    // Tasks of 64 records: compressed files continue one stream from task to task.
    expect(await readAllByTasks(reader, 64, false)).toEqual(expected);
    expect(await readAllByTasks(reader, 64, true)).toEqual(expected);
    // Out of order ranges of a compressed file restart the stream and still read right.
    const gz = shards[0]?.name as string;
    const later: string[] = [];
    for await (const r of reader.readRecords({ shardName: gz, start: 250, end: 255 })) later.push(text(r));
    for await (const r of reader.readRecords({ shardName: gz, start: 3, end: 5 })) later.push(text(r));
    expect(later).toEqual(['a:250', 'a:251', 'a:252', 'a:253', 'a:254', 'a:3', 'a:4']);
    await expect(
      (async () => {
        for await (const _ of reader.readRecords({ shardName: gz, start: 0, end: 301 })) {
          // drain
        }
      })(),
    ).rejects.toThrow(`OUT_OF_RANGE: records [0, 301) of ${gz}, which has 300 records`);
    const again = (await createDataReader(reader.describe())) as TFRecordDataReader;
    expect(again.files).toEqual(reader.files);
    await reader.close();
    await again.close();
  });

  it('createDataReader picks it by extension for a single file', async () => {
    const reader = await createDataReader(join(dir, 'tf', 'c.tfrec'));
    expect(reader).toBeInstanceOf(TFRecordDataReader);
    expect(reader.describe()).toEqual({
      type: 'tfrecord',
      params: {
        files: [join(dir, 'tf', 'c.tfrec')],
        compression: 'auto',
        maxOpenFiles: 16,
        batchBytes: 1048576,
      },
    });
    await reader.close?.();
  });

  it('a damaged file fails createShards with the fault naming file and offset', async () => {
    const reader = await TFRecordDataReader.open({ dataDir: join(dir, 'bad') });
    await expect(reader.createShards()).rejects.toThrow(
      new RegExp(
        `^TRUNCATED: record 9 at byte 171 of ${join(dir, 'bad', 'x.tfrecord')}: file ends inside a record`,
      ),
    );
    await reader.close();
  });
});

describe('TFRecordDataSource', () => {
  it('random access over uncompressed files, in order', async () => {
    const source = await TFRecordDataSource.open([
      join(dir, 'tf', 'b.tfrecord'),
      join(dir, 'tf', 'b.tfrecord'),
    ]);
    expect(source.length).toBe(1000);
    expect(text(await source.get(0))).toBe('b:0');
    expect(text(await source.get(999))).toBe('b:499');
    expect((await source.getMany([501, 2])).map(text)).toEqual(['b:1', 'b:2']);
    const again = await TFRecordDataSource.fromDescription(source.describe());
    expect(again.length).toBe(1000);
    source.close();
    again.close();
  });

  it('refuses compressed files with NOT_SEEKABLE', async () => {
    const error = await TFRecordDataSource.open(join(dir, 'tf', 'a.tfrecords.gz')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TFRecordError);
    expect((error as TFRecordError).code).toBe('NOT_SEEKABLE');
  });
});
