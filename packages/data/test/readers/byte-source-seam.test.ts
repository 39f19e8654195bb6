import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RecordIOWriter } from '@edl/recordio';
import { type ByteSource, type ObjectStat, registerByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RecordIODataSource } from '../../src/dataset/sources/recordio-data-source.js';
import {
  createDataReader,
  DataReaderError,
  RecordIODataReader,
  TextDataReader,
  TFRecordDataReader,
} from '../../src/readers/index.js';

let dir: string;
const encoder = new TextEncoder();

async function writeRecordIO(path: string, records: string[]): Promise<void> {
  const writer = await RecordIOWriter.create(path);
  for (const record of records) writer.write(encoder.encode(record));
  writer.close();
}

/** A remote-like source: lists and stats what it is given, and has no local path for anything. */
function remoteSource(scheme: string, objects: ObjectStat[]): ByteSource {
  return {
    scheme,
    list: async (location) => objects.filter((o) => o.location.startsWith(`${location}/`)),
    stat: async (location) => {
      const found = objects.find((o) => o.location === location);
      if (found === undefined) throw new Error(`no object ${location}`);
      return found;
    },
    readRange: async () => new Uint8Array(0),
    localPath: () => undefined,
  };
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-seam-'));
  await mkdir(join(dir, 'data'));
  await writeRecordIO(join(dir, 'data', 'a.rio'), ['a0', 'a1']);
  await writeRecordIO(join(dir, 'data', 'b.rio'), ['b0']);
  // Not data: a hidden file and a sidecar index are never listed as shards.
  await writeFile(join(dir, 'data', '.partial.rio'), 'not RecordIO');
  await writeFile(join(dir, 'data', 'a.rio.idx'), 'not RecordIO');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('file readers on the byte-source seam', () => {
  it('list a directory through its source, without hidden and sidecar files, and take file: URLs', async () => {
    const reader = await RecordIODataReader.open({ dataDir: pathToFileURL(join(dir, 'data')).href });
    try {
      expect(reader.files).toEqual([join(dir, 'data', 'a.rio'), join(dir, 'data', 'b.rio')]);
      expect(await reader.createShards()).toEqual([
        { name: join(dir, 'data', 'a.rio'), start: 0, count: 2 },
        { name: join(dir, 'data', 'b.rio'), start: 0, count: 1 },
      ]);
      expect(reader.describe().params).toMatchObject({ dataDir: join(dir, 'data') });
    } finally {
      await reader.close();
    }
    const byUrl = await RecordIODataReader.open({ files: [pathToFileURL(join(dir, 'data', 'b.rio')).href] });
    const records: string[] = [];
    for await (const r of byUrl.readRecords({ shardName: join(dir, 'data', 'b.rio'), start: 0, end: 1 })) {
      records.push(new TextDecoder().decode(r));
    }
    await byUrl.close();
    expect(records).toEqual(['b0']);
  });

  it('refuse a dataDir that is a file, and name a missing file when it is opened', async () => {
    const file = join(dir, 'data', 'a.rio');
    await expect(RecordIODataReader.open({ dataDir: file })).rejects.toThrow(
      `IO: cannot list ${file}: it is a file, not a directory`,
    );
    const missing = join(dir, 'data', 'missing.rio');
    const reader = await RecordIODataReader.open({ files: [missing] });
    await expect(reader.createShards()).rejects.toMatchObject({ code: 'IO', location: missing });
    await reader.close();
  });

  it('read the listing of a registered source, and read objects it has no local path for by ranges', async () => {
    const objects = [
      { location: 'seamtest://bucket/train/x.tfrecord', size: 10, version: '"etag-1"' },
      { location: 'seamtest://bucket/train/y.rio', size: 10, version: '"etag-2"' },
    ];
    registerByteSource('seamtest', () => remoteSource('seamtest', objects));
    const reader = await TFRecordDataReader.open({ dataDir: 'seamtest://bucket/train' });
    expect(reader.files).toEqual(['seamtest://bucket/train/x.tfrecord']);
    const error = await reader.createShards().catch((e: unknown) => e);
    // Objects with no local path are read remotely: their index first (this source knows no sidecar).
    expect(error).toBeInstanceOf(DataReaderError);
    expect((error as Error).message).toBe(
      'IO: cannot read the sidecar index seamtest://bucket/train/x.tfrecord.idx: no object seamtest://bucket/train/x.tfrecord.idx',
    );
    await reader.close();
    await expect(RecordIODataSource.open('seamtest://bucket/train/y.rio')).rejects.toMatchObject({
      code: 'ERR_SOURCE',
    });
    // The text reader reads a remote object by ranges too: this source's empty ranges are refused.
    const text = await TextDataReader.open({ path: 'seamtest://bucket/train/y.rio', format: 'lines' });
    await expect(text.recordCount()).rejects.toThrow(
      'IO: cannot read seamtest://bucket/train/y.rio: bytes [0, 10) came back as 0 bytes',
    );
  });

  it('name a scheme no source is registered for', async () => {
    const reader = await RecordIODataReader.open({ files: ['gs://bucket/a.rio'] });
    await expect(reader.createShards()).rejects.toThrow(
      /^UNSUPPORTED_SCHEME: gs:\/\/bucket\/a\.rio: the URL scheme gs: is not supported/,
    );
    await reader.close();
    await expect(createDataReader('gs://bucket/a.rio')).rejects.toMatchObject({ code: 'UNKNOWN_ORIGIN' });
  });

  it('the text reader stats its file through the source', async () => {
    await expect(TextDataReader.open({ path: join(dir, 'data') })).rejects.toThrow(
      `IO: cannot read ${join(dir, 'data')}: not a regular file`,
    );
    await expect(TextDataReader.open({ path: join(dir, 'none.csv') })).rejects.toThrow(
      new RegExp(`^IO: cannot read ${join(dir, 'none.csv')}: ENOENT`),
    );
  });
});
