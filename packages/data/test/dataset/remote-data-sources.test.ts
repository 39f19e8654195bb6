import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encodeSidecarIndex, RecordIOWriter, TFRecordWriter } from '@edl/recordio';
import { registerByteSource, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RangeHttpServer } from '../../../storage/test/support/range-http-server.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../../storage/test/support/s3rver-process.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import { RecordIODataSource } from '../../src/dataset/sources/recordio-data-source.js';
import { TFRecordDataSource } from '../../src/dataset/sources/tfrecord-data-source.js';
import { buildSidecarIndex } from '../../src/readers/index.js';

// The Grain sources over objects in a real S3 API server (npm's s3rver, a child process) and a
// node:http Range server: every record, read at random, equals the same source's record over the
// local copies of the files.

type GrainFileSource = RecordIODataSource | TFRecordDataSource;

const BUCKET = 'grain-sources';
const RIO = [
  ['a-gzip.rio', 'gzip'],
  ['b-snappy.rio', 'snappy'],
  ['c-none.rio', 'none'],
] as const;
const TFRECORD = ['x.tfrecord', 'y.tfrecord'];

let s3: S3rverProcess;
let source: S3ByteSource;
let scratch: string;
let indexCacheDir: string;
const rioPaths: string[] = [];
const tfrecordPaths: string[] = [];

function records(count: number, seed: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => {
    const record = Buffer.alloc((i * 7919 + seed * 31) % 300, i % 251);
    randomBytes(Math.floor(record.length / 2)).copy(record);
    return record;
  });
}

/** A fresh, empty index cache (so each source indexes as a first reader would). */
async function freshCache(): Promise<string> {
  return mkdtemp(join(scratch, 'cache-'));
}

/** Every record of `data`, asked for at once in a shuffled order by `getMany`, put back in order. */
async function readShuffled(data: GrainFileSource): Promise<Buffer[]> {
  const order = Array.from({ length: data.length }, (_, i) => i);
  for (let i = order.length - 1; i > 0; i--) {
    const j = (i * 7919 + 13) % (i + 1);
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const fetched = await data.getMany(order);
  const byIndex: Buffer[] = [];
  for (const [k, index] of order.entries()) byIndex[index] = Buffer.from(fetched[k] as Uint8Array);
  return byIndex;
}

/** The records of a shuffled MapDataset over `data`, with 4 reads at once. */
async function readThroughDataset(data: GrainFileSource): Promise<Buffer[]> {
  return MapDataset.source(data)
    .shuffle(3)
    .map((record) => Buffer.from(record))
    .toIterDataset({ threads: 4, prefetch: 16 })
    .toArray();
}

async function allRecords(data: GrainFileSource): Promise<Buffer[]> {
  return Promise.all(Array.from({ length: data.length }, async (_, i) => Buffer.from(await data.get(i))));
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edl-grain-remote-'));
  indexCacheDir = await freshCache();
  for (const [i, [name, compressor]] of RIO.entries()) {
    const path = join(scratch, name);
    const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 8 * 1024 });
    writer.writeBatch(records(700 + 100 * i, i));
    writer.close();
    rioPaths.push(path);
  }
  for (const [i, name] of TFRECORD.entries()) {
    const path = join(scratch, name);
    const writer = TFRecordWriter.create(path);
    for (const record of records(900 + 200 * i, 10 + i)) writer.write(record);
    await writer.close();
    tfrecordPaths.push(path);
  }
  const gzipped = TFRecordWriter.create(join(scratch, 'z.tfrecord.gz'), { compression: 'gzip' });
  gzipped.write('one');
  await gzipped.close();

  s3 = await startS3rver();
  await s3.createBucket(BUCKET);
  for (const path of [...rioPaths, ...tfrecordPaths, join(scratch, 'z.tfrecord.gz')]) {
    const name = path.slice(scratch.length + 1);
    const bytes = await readFile(path);
    await s3.put(BUCKET, `plain/${name}`, bytes);
    await s3.put(BUCKET, `indexed/${name}`, bytes);
    if (!name.endsWith('.gz')) {
      const format = name.endsWith('.rio') ? 'recordio' : 'tfrecord';
      const { index } = await buildSidecarIndex(path, format);
      await s3.put(BUCKET, `indexed/${name}.idx`, encodeSidecarIndex(index));
    }
  }
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, baseDelayMs: 5 });
  registerByteSource('s3', () => source);
}, 60_000);

afterAll(async () => {
  registerByteSource('s3', () => new S3ByteSource());
  await source?.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

const urls = (prefix: string, paths: readonly string[]): string[] =>
  paths.map((path) => `s3://${BUCKET}/${prefix}/${path.slice(scratch.length + 1)}`);

describe.each([
  ['RecordIODataSource', 'recordio', () => rioPaths, RecordIODataSource.open],
  ['TFRecordDataSource', 'tfrecord', () => tfrecordPaths, TFRecordDataSource.open],
] as const)('%s over s3://', (_name, type, localPaths, open) => {
  let local: Buffer[];

  beforeAll(async () => {
    const data = await open(localPaths());
    try {
      local = await allRecords(data);
    } finally {
      data.close();
    }
  });

  it('without sidecars: records read at random equal the local ones; each block is fetched once', async () => {
    const data = await open(urls('plain', localPaths()), { remote: { indexCacheDir: await freshCache() } });
    try {
      expect(data.length).toBe(local.length);
      expect(await readShuffled(data)).toEqual(local);
      const sorted = (list: Buffer[]) => [...list].sort(Buffer.compare);
      expect(sorted(await readThroughDataset(data))).toEqual(sorted(local));
      const stats = data.remoteStats;
      expect(stats.map((file) => file.index.origin)).toEqual(localPaths().map(() => 'header-walk'));
      // The default 32 MiB cache holds every decoded block of these small files: one GET each.
      for (const file of stats) expect(file.dataBytes).toBe((await source.stat(file.location)).size);
      expect(data.describe()).toEqual({ type, paths: urls('plain', localPaths()) });
    } finally {
      data.close();
    }
  });

  it('with sidecars: indexed from them, re-created from its description, and a small cache refetches', async () => {
    const paths = urls('indexed', localPaths());
    const data = await open(paths, { remote: { indexCacheDir: await freshCache(), cacheBytes: 0 } });
    try {
      expect(data.remoteStats.map((file) => file.index.origin)).toEqual(paths.map(() => 'sidecar'));
      expect(await allRecords(data)).toEqual(local);
      const again = await (type === 'recordio'
        ? RecordIODataSource.fromDescription(JSON.parse(JSON.stringify(data.describe())))
        : TFRecordDataSource.fromDescription(JSON.parse(JSON.stringify(data.describe()))));
      try {
        for (const i of [0, 1, local.length - 1, Math.floor(local.length / 2)]) {
          expect(Buffer.from(await again.get(i))).toEqual(local[i]);
        }
      } finally {
        again.close();
      }
      // A cache of 0 bytes keeps only the newest block: reading backwards fetches blocks again.
      const before = data.remoteStats.reduce((sum, file) => sum + file.dataRequests, 0);
      for (let i = local.length - 1; i >= 0; i -= 97)
        expect(Buffer.from(await data.get(i))).toEqual(local[i]);
      expect(data.remoteStats.reduce((sum, file) => sum + file.dataRequests, 0)).toBeGreaterThan(before);
    } finally {
      data.close();
    }
  });
});

describe('Grain sources over remote objects that cannot be read at random or changed', () => {
  it('a GZIP TFRecord object is refused with NOT_SEEKABLE naming it', async () => {
    const url = `s3://${BUCKET}/plain/z.tfrecord.gz`;
    await expect(TFRecordDataSource.open([url], { remote: { indexCacheDir } })).rejects.toMatchObject({
      code: 'NOT_SEEKABLE',
      message: expect.stringContaining(url),
    });
  });

  it('an object replaced after open fails the get that reads it with CHANGED, naming it', async () => {
    const original = await readFile(rioPaths[2] as string);
    await s3.put(BUCKET, 'replaced/c.rio', original);
    const url = `s3://${BUCKET}/replaced/c.rio`;
    const data = await RecordIODataSource.open([url], { remote: { indexCacheDir: await freshCache() } });
    try {
      const other = Buffer.from(original);
      other[other.length - 1] = (other[other.length - 1] ?? 0) ^ 0xff;
      await s3.put(BUCKET, 'replaced/c.rio', other);
      await expect(data.get(data.length - 1)).rejects.toMatchObject({
        code: 'CHANGED',
        message: expect.stringContaining(url),
      });
    } finally {
      data.close();
    }
  });

  it('reads http:// objects (RecordIO and TFRecord) served with Range', async () => {
    const server = await RangeHttpServer.start();
    try {
      for (const path of [...rioPaths, ...tfrecordPaths]) {
        server.put(`/d/${path.slice(scratch.length + 1)}`, await readFile(path));
      }
      const http = (paths: readonly string[]) =>
        paths.map((path) => `${server.origin}/d/${path.slice(scratch.length + 1)}`);
      const remote = { indexCacheDir: await freshCache() };
      for (const [open, paths] of [
        [RecordIODataSource.open, rioPaths],
        [TFRecordDataSource.open, tfrecordPaths],
      ] as const) {
        const local = await open(paths);
        const data = await open(http(paths), { remote });
        try {
          expect(await allRecords(data)).toEqual(await allRecords(local));
        } finally {
          data.close();
          local.close();
        }
      }
    } finally {
      await server.close();
    }
  });
});
