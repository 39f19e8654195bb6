import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteStats } from '../src/remote/remote-stats.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { configureS3 } from '../src/s3/s3-config.js';
import { deleteObject, openWriter, putObject } from '../src/sink/object-sink.js';
import { FaultProxy } from './support/fault-proxy.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';

const MIB = 1024 * 1024;

/** Writes `bytes` through `sink` in pieces of `piece` bytes, as a producer would. */
async function writeInPieces(
  sink: { write(chunk: Uint8Array): Promise<void> },
  bytes: Uint8Array,
  piece: number,
): Promise<void> {
  for (let offset = 0; offset < bytes.byteLength; offset += piece) {
    await sink.write(bytes.subarray(offset, offset + piece));
  }
}

describe('openWriter on local files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'edl-sink-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('shows nothing until close, then the whole file; parent directories are created', async () => {
    const path = join(dir, 'nested', 'deeper', 'a.bin');
    const bytes = randomBytes(300_000);
    const sink = await openWriter(path);
    await writeInPieces(sink, bytes, 70_000);
    expect(readdirSync(join(dir, 'nested', 'deeper')).filter((name) => !name.startsWith('.'))).toEqual([]);
    expect(sink.bytesWritten).toBe(bytes.byteLength);
    await sink.close();
    expect(readFileSync(path).equals(bytes)).toBe(true);
    expect(readdirSync(join(dir, 'nested', 'deeper'))).toEqual(['a.bin']);
    await expect(sink.write(bytes)).rejects.toThrow(/cannot write to .*a\.bin: the writer is closed/);
  });

  it('replaces an existing file whole, and an abort leaves the old one and no temporary file', async () => {
    const path = join(dir, 'b.bin');
    writeFileSync(path, 'old');
    const sink = await openWriter(`file://${path}`);
    await sink.write(randomBytes(1000));
    await sink.abort();
    expect(readFileSync(path, 'utf8')).toBe('old');
    await putObject(path, Buffer.from('new'));
    expect(readFileSync(path, 'utf8')).toBe('new');
    expect(readdirSync(dir).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    await deleteObject(path);
    await deleteObject(path);
    expect(readdirSync(dir)).not.toContain('b.bin');
  });

  it('refuses schemes it cannot write, naming the location', async () => {
    await expect(openWriter('https://example.invalid/a.rio')).rejects.toMatchObject({
      code: 'UNSUPPORTED_SCHEME',
      location: 'https://example.invalid/a.rio',
    });
  });
});

describe('openWriter on S3 (s3rver)', () => {
  let s3: S3rverProcess;
  let proxy: FaultProxy;
  let source: S3ByteSource;

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('out');
    // Through a proxy that records the requests: which S3 calls a write made is part of what is tested.
    proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    configureS3({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS });
    source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
  });
  afterAll(async () => {
    configureS3({});
    await source?.close();
    await proxy?.close();
    await s3?.stop();
  });

  const keysUnder = async (prefix: string) =>
    (await source.list(prefix).catch(() => [])).map((object) => object.location);

  it('uploads a 20 MiB object in 8 MiB parts that reads back byte-identical', async () => {
    const bytes = randomBytes(20 * MIB);
    const stats = new RemoteStats();
    // Straight to s3rver with settings of its own: the proxy holds a body until it has it whole,
    // which stalls the SDK's "Expect: 100-continue" parts for 6 s each.
    const sink = await openWriter('s3://out/big/data.rio', {
      stats,
      s3: { endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS },
    });
    await writeInPieces(sink, bytes, 3 * MIB + 17);
    await sink.close();
    // CreateMultipartUpload, three UploadParts (8 + 8 + 4 MiB), CompleteMultipartUpload; no retries.
    expect(stats.snapshot().requests).toBe(5);
    expect(Object.values(stats.snapshot().retries).every((count) => count === 0)).toBe(true);
    const stat = await source.stat('s3://out/big/data.rio');
    expect(stat.size).toBe(bytes.byteLength);
    const back = await source.readRange(stat, 0, stat.size);
    expect(Buffer.from(back).equals(bytes)).toBe(true);
  });

  it('sends an object of at most one part by one PutObject', async () => {
    const stats = new RemoteStats();
    await putObject('s3://out/small/a.json', Buffer.from('{"a":1}'), { stats });
    expect(stats.snapshot().requests).toBe(1);
    const stat = await source.stat('s3://out/small/a.json');
    expect(Buffer.from(await source.readRange(stat, 0, stat.size)).toString()).toBe('{"a":1}');
    await deleteObject('s3://out/small/a.json');
    await deleteObject('s3://out/small/a.json');
    expect(await keysUnder('s3://out/small/')).toEqual([]);
  });

  it('an aborted multipart upload leaves no object, and the upload is aborted', {
    timeout: 30_000,
  }, async () => {
    const sink = await openWriter('s3://out/aborted/data.rio', { partSize: 5 * MIB });
    await writeInPieces(sink, randomBytes(6 * MIB), MIB);
    // s3rver 3.7.1 answers AbortMultipartUpload with 405 (not implemented), so the abort reports
    // the upload it could not remove; a store that implements it (AWS, MinIO, radosgw) succeeds.
    const aborted = await sink.abort().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    const uploadId = /uploadId=([^&\s]+)/.exec(
      proxy.requests.findLast((request) => request.path.includes('partNumber='))?.path ?? '',
    )?.[1];
    expect(uploadId).toBeDefined();
    const abortCall = proxy.requests.findLast((request) => request.method === 'DELETE');
    expect(abortCall?.path).toContain(`uploadId=${uploadId}`);
    expect(aborted?.message).toMatch(
      new RegExp(
        `^UNAVAILABLE: s3://out/aborted/data\\.rio: the multipart upload ${uploadId} could not be aborted .*405 MethodNotAllowed`,
      ),
    );
    expect(await keysUnder('s3://out/aborted/')).toEqual([]);
    await expect(sink.write(Buffer.from('x'))).rejects.toThrow(/the writer is aborted/);
  });

  it('a part that keeps failing fails the write, naming the part, and leaves no object', {
    timeout: 60_000,
  }, async () => {
    const sink = await openWriter('s3://out/failed/data.rio', {
      partSize: 5 * MIB,
      maxAttempts: 2,
      baseDelayMs: 1,
    });
    proxy.inject(
      [
        { kind: 'status', status: 500, code: 'InternalError' },
        { kind: 'status', status: 500, code: 'InternalError' },
      ],
      (request) => request.method === 'PUT' && request.path.includes('partNumber=2'),
    );
    const failure = await (async () => {
      await writeInPieces(sink, randomBytes(11 * MIB), MIB);
      await sink.close();
    })().then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failure?.message).toMatch(
      /^UNAVAILABLE: s3:\/\/out\/failed\/data\.rio: upload part 2 gave up after 2 attempts; last: 500 InternalError/,
    );
    expect(proxy.pendingFaults).toBe(0);
    expect(proxy.requests.at(-1)?.method).toBe('DELETE');
    expect(await keysUnder('s3://out/failed/')).toEqual([]);
  });
});
