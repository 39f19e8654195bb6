import { randomBytes } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { configureS3, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FaultProxy } from '../../storage/test/support/fault-proxy.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { buildLocalSidecarIndex, encodeSidecarIndex, TFRecordReader, TFRecordWriter } from '../src/index.js';

// TFRecordWriter.create('s3://...') against a real S3 API server (npm's s3rver, a child process):
// the object is byte-identical to a local write of the same records, large ones go up in parts,
// an uncompressed one gets its sidecar index, and nothing is left behind on failure.

const MIB = 1024 * 1024;
let s3: S3rverProcess;
/** Between the writers and s3rver, recording which S3 calls an upload made. */
let proxy: FaultProxy;
let source: S3ByteSource;
let scratch: string;
/** The writers' temporary directories go here (TMPDIR), so the tests can see them removed. */
let staging: string;
let savedTmpdir: string | undefined;

/** About `bytes` of records, half random (so gzip has something to do and something it cannot). */
function records(bytes: number): Buffer[] {
  const out: Buffer[] = [];
  for (let total = 0, i = 0; total < bytes; i++) {
    const record = Buffer.alloc(1000 + ((i * 7919) % 3000), i % 251);
    randomBytes(record.length >> 1).copy(record);
    out.push(record);
    total += record.length;
  }
  return out;
}

async function write(location: string, data: readonly Buffer[], compression: 'none' | 'gzip'): Promise<void> {
  const writer = TFRecordWriter.create(location, { compression });
  for (const record of data) writer.write(record);
  await writer.close();
}

/** An S3 request as `METHOD /bucket/key`, plus what a multipart upload's query makes it. */
function s3Call({ method, path }: { method: string; path: string }): string {
  const [key, query = ''] = path.split('?');
  const kind = query.includes('partNumber=')
    ? ' part'
    : query.includes('uploads')
      ? ' create'
      : query.includes('uploadId=')
        ? ' complete'
        : '';
  return `${method} ${key}${kind}`;
}

async function objectBytes(location: string): Promise<Buffer> {
  const stat = await source.stat(location);
  return Buffer.from(await source.readRange(stat, 0, stat.size));
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'edl-tfrecord-s3-'));
  staging = await mkdtemp(join(scratch, 'tmp-'));
  s3 = await startS3rver();
  savedTmpdir = process.env.TMPDIR;
  process.env.TMPDIR = staging;
  await s3.createBucket('out');
  proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
  configureS3({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS });
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
}, 60_000);

afterAll(async () => {
  if (savedTmpdir === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmpdir;
  configureS3({});
  await source?.close();
  await proxy?.close();
  await s3?.stop();
  if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
});

describe('TFRecordWriter to s3://', () => {
  it('uploads a 10 MiB file in parts, byte-identical to a local write, with its sidecar index', async () => {
    const data = records(10 * MIB);
    proxy.requests.length = 0;
    const local = join(scratch, 'big.tfrecord');
    await write(local, data, 'none');
    await write('s3://out/train/big.tfrecord', data, 'none');
    const expected = await readFile(local);
    expect(expected.byteLength).toBeGreaterThan(8 * MIB);
    expect((await objectBytes('s3://out/train/big.tfrecord')).equals(expected)).toBe(true);
    // CreateMultipartUpload, two 8 MiB-at-most UploadParts, CompleteMultipartUpload; then the sidecar's PutObject.
    expect(proxy.requests.map(s3Call)).toEqual([
      'POST /out/train/big.tfrecord create',
      'PUT /out/train/big.tfrecord part',
      'PUT /out/train/big.tfrecord part',
      'POST /out/train/big.tfrecord complete',
      'PUT /out/train/big.tfrecord.idx',
    ]);
    const sidecar = await objectBytes('s3://out/train/big.tfrecord.idx');
    expect(sidecar.equals(encodeSidecarIndex(await buildLocalSidecarIndex(local, 'tfrecord')))).toBe(true);
    // The listing shows the data, not its sidecar; the writer's temporary directory is gone.
    expect((await source.list('s3://out/train/')).map((object) => object.location)).toEqual([
      's3://out/train/big.tfrecord',
    ]);
    expect(await readdir(staging)).toEqual([]);
  });

  it('uploads a GZIP stream byte-identical to a local one, in one PutObject and with no sidecar', async () => {
    const data = records(MIB);
    const local = join(scratch, 'small.tfrecord.gz');
    await write(local, data, 'gzip');
    await write('s3://out/gz/small.tfrecord.gz', data, 'gzip');
    const uploaded = await objectBytes('s3://out/gz/small.tfrecord.gz');
    expect(uploaded.equals(await readFile(local))).toBe(true);
    expect(proxy.requests.slice(-1).map(({ method, path }) => `${method} ${path}`)).toEqual([
      'PUT /out/gz/small.tfrecord.gz?x-id=PutObject',
    ]);
    await expect(source.stat('s3://out/gz/small.tfrecord.gz.idx')).rejects.toMatchObject({
      code: 'NOT_FOUND',
    });
    const reader = await TFRecordReader.open(local);
    expect(reader.numRecords).toBe(data.length);
    reader.close();
    expect(await readdir(staging)).toEqual([]);
  });

  it('a failed upload rejects close() with one IO error naming the object, and leaves nothing', async () => {
    const writer = TFRecordWriter.create('s3://no-such-bucket/a.tfrecord');
    writer.write('one');
    const failure = await writer.close().then(
      () => undefined,
      (error: unknown) => error as Error & { code?: string },
    );
    expect(failure?.code).toBe('IO');
    expect(failure?.message).toMatch(
      /^IO: s3:\/\/no-such-bucket\/a\.tfrecord: cannot upload: put failed: 404 NoSuchBucket.* \(NOT_FOUND\)$/,
    );
    expect(await readdir(staging)).toEqual([]);
    await writer.close(); // idempotent
  });

  it('refuses a URL scheme it cannot write, at create', () => {
    expect(() => TFRecordWriter.create('https://example.invalid/a.tfrecord')).toThrow(
      'IO: https://example.invalid/a.tfrecord: cannot create: https: objects cannot be written (writable: paths, s3:)',
    );
  });
});
