import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import {
  type CompressorName,
  encodeSidecarIndex,
  type RecordIOError,
  RecordIOWriter,
  TFRecordWriter,
} from '@edl/recordio';
import { registerByteSource, S3ByteSource, type S3ByteSourceOptions } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../../storage/test/support/fault-proxy.js';
import { RangeHttpServer } from '../../../storage/test/support/range-http-server.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../../storage/test/support/s3rver-process.js';
import type { DataReader, RecordRange, Shard } from '../../src/protocols.js';
import {
  buildSidecarIndex,
  createDataReader,
  RecordIODataReader,
  type RemoteReadStats,
  TFRecordDataReader,
} from '../../src/readers/index.js';

// Reads RecordIO and TFRecord objects from a real S3 API server (npm's s3rver, started as a
// process) through createDataReader('s3://bucket/prefix/'), and compares every record with a
// local read of the same files, task by task, as a worker reads them.

const BUCKET = 'remote-reads';
const RECORDS_PER_TASK = 97;
const RIO_FILES: ReadonlyArray<readonly [string, CompressorName]> = [
  ['a-gzip.rio', 'gzip'],
  ['b-snappy.rio', 'snappy'],
  ['c-none.rio', 'none'],
];
const TFRECORD_FILES = ['x.tfrecord', 'y.tfrecord'];

let s3: S3rverProcess;
let scratch: string;
let localRio: string;
let localTFRecord: string;
const sources: S3ByteSource[] = [];

/** Registers an S3 source for `s3:` (the one every reader in this file uses), returning it. */
function useS3(options: S3ByteSourceOptions = {}): S3ByteSource {
  const source = new S3ByteSource({
    endpoint: s3.endpoint,
    credentials: S3RVER_CREDENTIALS,
    baseDelayMs: 5,
    maxDelayMs: 50,
    ...options,
  });
  sources.push(source);
  registerByteSource('s3', () => source);
  return source;
}

/** A fresh, empty index cache directory. */
async function freshCache(): Promise<string> {
  return mkdtemp(join(scratch, 'cache-'));
}

function randomRecords(count: number, seed: number): Buffer[] {
  return Array.from({ length: count }, (_, i) => {
    const length = (i * 7919 + seed * 31) % 400;
    // Half random, half repeated: gzip and snappy have something to compress.
    const record = Buffer.alloc(length, i % 251);
    randomBytes(Math.floor(length / 2)).copy(record);
    return record;
  });
}

/** Batches read and the distinct buffers their records were in, when a read releases every batch. */
interface ReleasedBatches {
  batches: number;
  readonly buffers: Set<ArrayBufferLike>;
}

/**
 * Every shard cut into tasks; each task is announced one ahead of its read, as the worker's TaskFeed
 * does. With `released`, each batch is copied out, then released (as the worker's batch path does).
 */
async function readTasks(
  reader: DataReader<unknown>,
  shards: readonly Shard[],
  released?: ReleasedBatches,
): Promise<Buffer[][]> {
  const tasks: RecordRange[] = [];
  for (const shard of shards) {
    for (let start = shard.start; start < shard.start + shard.count; start += RECORDS_PER_TASK) {
      tasks.push({ shardName: shard.name, start, end: Math.min(start + RECORDS_PER_TASK, shard.count) });
    }
  }
  const prefetch = (reader as { prefetch?: (range: RecordRange) => void }).prefetch;
  const perShard = new Map<string, Buffer[]>();
  if (tasks[0] !== undefined) prefetch?.(tasks[0]);
  for (let i = 0; i < tasks.length; i++) {
    const task = tasks[i] as RecordRange;
    const next = tasks[i + 1];
    if (next !== undefined) prefetch?.(next);
    const records = perShard.get(basename(task.shardName)) ?? [];
    perShard.set(basename(task.shardName), records);
    for await (const batch of (reader as RecordIODataReader).readBatches(task)) {
      for (const record of batch) records.push(Buffer.from(record));
      if (released !== undefined && batch.length > 0) {
        released.batches++;
        released.buffers.add(batch.data.buffer);
        batch.release();
      }
    }
  }
  return [...perShard.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, records]) => records);
}

async function readLocally(reader: DataReader<unknown>): Promise<Buffer[][]> {
  try {
    return await readTasks(reader, await reader.createShards());
  } finally {
    await reader.close?.();
  }
}

function dataBytesOf(stats: RemoteReadStats): number {
  return stats.files.reduce((sum, file) => sum + file.dataBytes, 0);
}

async function upload(localDir: string, names: readonly string[], prefix: string): Promise<number> {
  let total = 0;
  for (const name of names) {
    const bytes = await readFile(join(localDir, name));
    total += bytes.byteLength;
    await s3.put(BUCKET, `${prefix}${name}`, bytes);
  }
  return total;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edl-remote-reads-'));
  localRio = join(scratch, 'rio');
  localTFRecord = join(scratch, 'tfrecord');
  await mkdir(localRio);
  await mkdir(localTFRecord);
  for (const [i, [name, compressor]] of RIO_FILES.entries()) {
    // Small chunks: many chunks per file, and task boundaries inside chunks.
    const writer = await RecordIOWriter.create(join(localRio, name), {
      compressor,
      maxChunkBytes: 16 * 1024,
    });
    writer.writeBatch(randomRecords(2500 + i * 300, i));
    writer.close();
  }
  for (const [i, name] of TFRECORD_FILES.entries()) {
    const writer = TFRecordWriter.create(join(localTFRecord, name));
    for (const record of randomRecords(1800 + i * 500, 10 + i)) writer.write(record);
    await writer.close();
  }
  s3 = await startS3rver();
  await s3.createBucket(BUCKET);
  const rioNames = RIO_FILES.map(([name]) => name);
  await upload(localRio, rioNames, 'rio/');
  await upload(localTFRecord, TFRECORD_FILES, 'tfrecord/');
  // The same data with sidecar indexes next to it, built by the code `edl <format> index` runs.
  await upload(localRio, rioNames, 'rio-idx/');
  await upload(localTFRecord, TFRECORD_FILES, 'tfrecord-idx/');
  for (const [dir, names, format, prefix] of [
    [localRio, rioNames, 'recordio', 'rio-idx/'],
    [localTFRecord, TFRECORD_FILES, 'tfrecord', 'tfrecord-idx/'],
  ] as const) {
    for (const name of names) {
      const { index } = await buildSidecarIndex(join(dir, name), format);
      await s3.put(BUCKET, `${prefix}${name}.idx`, encodeSidecarIndex(index));
    }
  }
}, 60_000);

afterAll(async () => {
  registerByteSource('s3', () => new S3ByteSource());
  for (const source of sources) await source.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe.each([
  ['RecordIO (gzip, snappy, none)', 'rio', () => RecordIODataReader.open({ dataDir: localRio })],
  ['TFRecord', 'tfrecord', () => TFRecordDataReader.open({ dataDir: localTFRecord })],
] as const)('remote reads of %s from s3rver', (_name, prefix, openLocal) => {
  let local: Buffer[][];
  let totalBytes: number;

  beforeAll(async () => {
    local = await readLocally(await openLocal());
    const names = prefix === 'rio' ? RIO_FILES.map(([name]) => name) : TFRECORD_FILES;
    const dir = prefix === 'rio' ? localRio : localTFRecord;
    totalBytes = 0;
    for (const name of names) totalBytes += (await readFile(join(dir, name))).byteLength;
  });

  it('without sidecars: a header walk per file, cached; records byte-identical to the local read', async () => {
    const source = useS3();
    const indexCacheDir = await freshCache();
    const reader = await createDataReader(`s3://${BUCKET}/${prefix}/`, { remote: { indexCacheDir } });
    const shards = await reader.createShards();
    expect(shards.map((shard) => shard.count)).toEqual(local.map((records) => records.length));
    expect(shards[0]?.name).toMatch(new RegExp(`^s3://${BUCKET}/${prefix}/`));
    const before = source.stats.snapshot();
    const remote = await readTasks(reader, shards);
    const after = source.stats.snapshot();
    expect(remote).toEqual(local);
    const stats = (reader as RecordIODataReader).remoteStats;
    await reader.close?.();
    for (const file of stats.files) {
      expect(file.index.origin).toBe('header-walk');
      // No HEAD: the listing saw no sidecar. Then the walk: a GET per chunk header (16 KiB chunks:
      // several per file), or one GET per 1 MiB window of frames (these files fit in one, and it
      // holds the last block's header too).
      if (prefix === 'rio') expect(file.index.requests).toBeGreaterThan(1);
      else expect(file.index.requests).toBe(1);
    }
    // Over a whole epoch of tasks, every byte of data is fetched once: task boundaries inside a
    // chunk or block reuse the block the previous task fetched.
    expect(after.bytes - before.bytes).toBe(dataBytesOf(stats));
    expect(dataBytesOf(stats) / totalBytes).toBeLessThanOrEqual(1.05);
    expect(dataBytesOf(stats)).toBe(totalBytes);

    // A second reader finds the indexes in the cache: no request before the data GETs.
    const again = await createDataReader(`s3://${BUCKET}/${prefix}/`, { remote: { indexCacheDir } });
    await again.createShards();
    const cached = (again as RecordIODataReader).remoteStats;
    await again.close?.();
    expect(cached.files.map((file) => file.index)).toEqual(
      cached.files.map(() => ({ origin: 'cache', requests: 0 })),
    );
  });

  it('with sidecars: one GET per file for its index (the listing saw the sidecar); the same records', async () => {
    const source = useS3();
    const reader = await createDataReader(`s3://${BUCKET}/${prefix}-idx/`, {
      type: prefix === 'rio' ? 'recordio' : 'tfrecord',
      remote: { indexCacheDir: await freshCache() },
    });
    const before = source.stats.snapshot().requests;
    const shards = await reader.createShards();
    const indexRequests = source.stats.snapshot().requests - before;
    const stats = (reader as RecordIODataReader).remoteStats;
    // The listing was made by open() and named each sidecar with its size and ETag: shards cost
    // each file one GET of its sidecar, nothing else.
    expect(stats.files.map((file) => file.index)).toEqual(
      stats.files.map(() => ({ origin: 'sidecar', requests: 1 })),
    );
    expect(indexRequests).toBe(shards.length);
    expect(await readTasks(reader, shards)).toEqual(local);
    const read = (reader as RecordIODataReader).remoteStats;
    await reader.close?.();
    expect(dataBytesOf(read)).toBe(totalBytes);
  });

  it('keeps fetched bytes within the read-ahead budget, whatever the ranges', async () => {
    useS3();
    // Larger than any chunk or block of these files (TFRecord blocks are about 64 KiB), so no piece
    // is bigger than partBytes.
    const partBytes = 128 * 1024;
    const readAheadBytes = 256 * 1024;
    const maxInFlight = 2;
    const reader = await createDataReader(`s3://${BUCKET}/${prefix}-idx/`, {
      type: prefix === 'rio' ? 'recordio' : 'tfrecord',
      remote: { indexCacheDir: await freshCache(), partBytes, readAheadBytes, maxInFlight },
    });
    expect(await readTasks(reader, await reader.createShards())).toEqual(local);
    const stats = (reader as RecordIODataReader).remoteStats;
    await reader.close?.();
    expect(stats.peakBufferedBytes).toBeGreaterThan(0);
    // The read-ahead budget, plus the piece the one read in progress asked for itself.
    expect(stats.peakBufferedBytes).toBeLessThanOrEqual(readAheadBytes + partBytes);
    expect(stats.bufferedBytes).toBe(0);
  });

  it('reuses fetched and decoded memory for released batches; adjacent tasks still share blocks', async () => {
    useS3();
    // Small parts: many pieces per file, each task's last block kept for the next one (announced
    // before this one is read), while their buffers go round.
    const reader = await createDataReader(`s3://${BUCKET}/${prefix}-idx/`, {
      type: prefix === 'rio' ? 'recordio' : 'tfrecord',
      remote: { indexCacheDir: await freshCache(), partBytes: 24 * 1024 },
    });
    const released: ReleasedBatches = { batches: 0, buffers: new Set() };
    expect(await readTasks(reader, await reader.createShards(), released)).toEqual(local);
    const stats = (reader as RecordIODataReader).remoteStats;
    await reader.close?.();
    expect(dataBytesOf(stats)).toBe(totalBytes);
    expect(released.batches).toBeGreaterThan(20);
    // Released buffers were filled again: far fewer buffers than batches.
    expect(released.buffers.size).toBeLessThan(released.batches / 2);
  });
});

describe('remote reads over http://', () => {
  it('read RecordIO files served with Range, one with a sidecar and one without', async () => {
    const names = RIO_FILES.map(([name]) => name).slice(0, 2) as [string, string];
    const local = await readLocally(
      await RecordIODataReader.open({ files: names.map((name) => join(localRio, name)) }),
    );
    const server = await RangeHttpServer.start();
    try {
      for (const name of names) server.put(`/data/${name}`, await readFile(join(localRio, name)));
      const { index } = await buildSidecarIndex(join(localRio, names[0]), 'recordio');
      server.put(`/data/${names[0]}.idx`, encodeSidecarIndex(index));
      const reader = await RecordIODataReader.open({
        files: names.map((name) => `${server.origin}/data/${name}`),
        remote: { indexCacheDir: await freshCache() },
      });
      expect(await readTasks(reader, await reader.createShards())).toEqual(local);
      const origins = reader.remoteStats.files.map((file) => [basename(file.location), file.index.origin]);
      await reader.close();
      expect(origins.sort()).toEqual([
        [names[0], 'sidecar'],
        [names[1], 'header-walk'],
      ]);
    } finally {
      await server.close();
    }
  });
});

describe('remote reads that go wrong', () => {
  it('a replaced object fails the read, naming the object', async () => {
    useS3();
    const name = RIO_FILES[0]?.[0] as string;
    const original = await readFile(join(localRio, name));
    await s3.put(BUCKET, `replaced/${name}`, original);
    const reader = await RecordIODataReader.open({
      files: [`s3://${BUCKET}/replaced/${name}`],
      remote: { indexCacheDir: await freshCache() },
    });
    const [shard] = await reader.createShards();
    // Replaced after the listing pinned its ETag: same size, other bytes.
    const other = Buffer.from(original);
    other[other.length - 1] = (other[other.length - 1] ?? 0) ^ 0xff;
    await s3.put(BUCKET, `replaced/${name}`, other);
    const read = async (): Promise<void> => {
      for await (const _ of reader.readBatches({ shardName: shard?.name ?? '', start: 0, end: 10 })) {
        // drain
      }
    };
    await expect(read()).rejects.toMatchObject({
      code: 'CHANGED',
      message: expect.stringContaining(`s3://${BUCKET}/replaced/${name}`),
    });
    await reader.close?.();
  });

  it('a corrupt chunk fails its task with the code and message of a local read, naming the URL', async () => {
    useS3();
    const golden = join(import.meta.dirname, '../../../recordio/test/golden/bad-crc-none-64k.rio');
    await s3.put(BUCKET, 'corrupt/bad.rio', await readFile(golden));
    const failureOf = async (reader: RecordIODataReader): Promise<Error> => {
      const [shard] = await reader.createShards();
      const range = { shardName: shard?.name ?? '', start: 0, end: shard?.count ?? 0 };
      try {
        for await (const _ of reader.readBatches(range)) {
          // drain
        }
      } catch (error) {
        return error as Error;
      } finally {
        await reader.close();
      }
      throw new Error('the corrupt chunk was read');
    };
    const local = await failureOf(await RecordIODataReader.open({ files: [golden], prefetch: false }));
    const remote = await failureOf(
      await RecordIODataReader.open({
        files: [`s3://${BUCKET}/corrupt/bad.rio`],
        remote: { indexCacheDir: await freshCache() },
      }),
    );
    expect(remote).toMatchObject({ name: local.name, code: (local as RecordIOError).code });
    expect(remote.message).toBe(local.message.replace(golden, `s3://${BUCKET}/corrupt/bad.rio`));
  });

  it('a sidecar of another size is refused and the object is walked instead', async () => {
    useS3();
    const [first, second] = RIO_FILES.map(([name]) => name) as [string, string];
    await s3.put(BUCKET, `stale/${first}`, await readFile(join(localRio, first)));
    const { index } = await buildSidecarIndex(join(localRio, second), 'recordio');
    await s3.put(BUCKET, `stale/${first}.idx`, encodeSidecarIndex(index));
    const reader = await RecordIODataReader.open({
      dataDir: `s3://${BUCKET}/stale/`,
      remote: { indexCacheDir: await freshCache() },
    });
    const shards = await reader.createShards();
    const [file] = reader.remoteStats.files;
    await reader.close?.();
    expect(shards).toHaveLength(1);
    expect(file?.index.origin).toBe('header-walk');
    expect(file?.index.sidecarRefused).toContain(`s3://${BUCKET}/stale/${first}.idx indexes`);
  });

  it('through a proxy that resets connections mid-body, the records are still identical', async () => {
    const local = await readLocally(await RecordIODataReader.open({ dataDir: localRio }));
    const proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    try {
      const source = useS3({ endpoint: proxy.endpoint });
      const reader = await createDataReader(`s3://${BUCKET}/rio-idx/`, {
        type: 'recordio',
        remote: { indexCacheDir: await freshCache(), partBytes: 64 * 1024 },
      });
      const shards = await reader.createShards();
      proxy.inject(
        Array.from({ length: 6 }, (_, i) => ({ kind: 'reset', afterBytes: 1500 + i * 400 }) as const),
      );
      expect(await readTasks(reader, shards)).toEqual(local);
      await reader.close?.();
      expect(proxy.pendingFaults).toBe(0);
      // Every reset lands inside a body (the smallest piece, a gzip chunk, is over 3.5 KB) and is
      // resumed where it broke.
      expect(source.stats.snapshot().retries['connection-reset']).toBe(6);
    } finally {
      await proxy.close();
    }
  });

  it('a GZIP TFRecord object is one shard, counted and read as one stream', async () => {
    useS3();
    const path = join(scratch, 'stream.tfrecord.gz');
    const records = randomRecords(3000, 42);
    const writer = TFRecordWriter.create(path, { compression: 'gzip' });
    for (const record of records) writer.write(record);
    await writer.close();
    await s3.put(BUCKET, 'gzip/stream.tfrecord.gz', await readFile(path));
    const reader = await createDataReader(`s3://${BUCKET}/gzip/`, {
      remote: { indexCacheDir: await freshCache(), partBytes: 64 * 1024 },
    });
    const shards = await reader.createShards();
    expect(shards).toEqual([{ name: `s3://${BUCKET}/gzip/stream.tfrecord.gz`, start: 0, count: 3000 }]);
    expect(await readTasks(reader, shards)).toEqual([records]);
    const [file] = (reader as TFRecordDataReader).remoteStats.files;
    await reader.close?.();
    expect(file?.index.origin).toBe('stream-count');
    // Consecutive tasks continue one stream: the object is fetched once for the count, once to read.
    const size = (await readFile(path)).byteLength;
    expect(file?.dataBytes).toBe(size);
  });

  it('a sidecar replaced after the listing is looked up afresh, never read as listed', async () => {
    useS3();
    const [first, second] = RIO_FILES.map(([name]) => name) as [string, string];
    await s3.put(BUCKET, `replaced/${first}`, await readFile(join(localRio, first)));
    const own = await buildSidecarIndex(join(localRio, first), 'recordio');
    await s3.put(BUCKET, `replaced/${first}.idx`, encodeSidecarIndex(own.index));
    const reader = await RecordIODataReader.open({
      dataDir: `s3://${BUCKET}/replaced/`,
      remote: { indexCacheDir: await freshCache() },
    });
    // Listed with its sidecar; then the sidecar is replaced by another file's.
    const other = await buildSidecarIndex(join(localRio, second), 'recordio');
    await s3.put(BUCKET, `replaced/${first}.idx`, encodeSidecarIndex(other.index));
    await reader.createShards();
    const [file] = reader.remoteStats.files;
    await reader.close?.();
    // The listed ETag no longer matches (the GET fails CHANGED): a HEAD and a GET of the new
    // sidecar, which indexes another size, so the object is walked.
    expect(file?.index.origin).toBe('header-walk');
    expect(file?.index.sidecarRefused).toContain(`s3://${BUCKET}/replaced/${first}.idx indexes`);
  });

  it('a damaged remote sidecar is refused, never trusted', async () => {
    useS3();
    const name = TFRECORD_FILES[0] as string;
    await s3.put(BUCKET, `damaged/${name}`, await readFile(join(localTFRecord, name)));
    const { index } = await buildSidecarIndex(join(localTFRecord, name), 'tfrecord');
    const bytes = encodeSidecarIndex(index);
    bytes[bytes.length - 9] = (bytes[bytes.length - 9] ?? 0) ^ 1;
    await s3.put(BUCKET, `damaged/${name}.idx`, bytes);
    const reader = await TFRecordDataReader.open({
      files: [`s3://${BUCKET}/damaged/${name}`],
      remote: { indexCacheDir: await freshCache() },
    });
    const [shard] = await reader.createShards();
    const [file] = reader.remoteStats.files;
    await reader.close?.();
    expect(shard?.count).toBe(1800);
    expect(file?.index.origin).toBe('header-walk');
    expect(file?.index.sidecarRefused).toMatch(/^CHECKSUM: .*damaged\/x\.tfrecord\.idx/);
  });
});

describe('the header walk of a TFRecord object over 1 MiB', () => {
  it('reads 1 MiB windows, a rest of up to 1.25 MiB whole, and takes the last header from the last window', async () => {
    useS3();
    const dir = join(scratch, 'windows');
    await mkdir(dir);
    // About 1.1 MiB (one window) and 2.6 MiB (1 MiB, 1 MiB, then the 0.6 MiB rest) of 1000-byte records.
    for (const [name, records] of [
      ['a.tfrecord', 1100],
      ['b.tfrecord', 2600],
    ] as const) {
      const writer = TFRecordWriter.create(join(dir, name));
      for (let i = 0; i < records; i++) writer.write(Buffer.alloc(1000 - 16, i % 251));
      await writer.close();
      await s3.put(BUCKET, `windows/${name}`, await readFile(join(dir, name)));
    }
    const local = await readLocally(await TFRecordDataReader.open({ dataDir: dir }));
    const reader = await TFRecordDataReader.open({
      dataDir: `s3://${BUCKET}/windows/`,
      remote: { indexCacheDir: await freshCache() },
    });
    const shards = await reader.createShards();
    const indexes = reader.remoteStats.files.map((file) => [basename(file.location), file.index]);
    expect(await readTasks(reader, shards)).toEqual(local);
    await reader.close();
    expect(indexes.sort()).toEqual([
      ['a.tfrecord', { origin: 'header-walk', requests: 1 }],
      ['b.tfrecord', { origin: 'header-walk', requests: 3 }],
    ]);
  });
});

describe('createDataReader of an s3:// prefix', () => {
  it('lists the prefix once: the listing that picks the reader is the one it opens with', async () => {
    const source = useS3();
    for (const prefix of ['rio/', 'tfrecord/']) {
      const before = source.stats.snapshot().requests;
      const reader = await createDataReader(`s3://${BUCKET}/${prefix}`, {
        remote: { indexCacheDir: await freshCache() },
      });
      expect(source.stats.snapshot().requests - before).toBe(1);
      expect(reader).toBeInstanceOf(prefix === 'rio/' ? RecordIODataReader : TFRecordDataReader);
      // Later work lists afresh: the shared listing lives only while the reader is created.
      const shards = await reader.createShards();
      expect(shards).toHaveLength(prefix === 'rio/' ? RIO_FILES.length : TFRECORD_FILES.length);
      await reader.close?.();
    }
  });
});
