import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RemoteError } from '../src/remote/remote-error.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { FaultProxy } from './support/fault-proxy.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';

const run = promisify(execFile);

describe('S3ByteSource against s3rver', () => {
  let s3: S3rverProcess;
  let source: S3ByteSource;
  const big = randomBytes(300_000);

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('data');
    for (let i = 0; i < 7; i++) await s3.put('data', `train/part-${i}.rio`, randomBytes(100 + i));
    await s3.put('data', 'train/part-0.rio.idx', randomBytes(10));
    await s3.put('data', 'train/part-1.rio.index', randomBytes(10));
    await s3.put('data', 'train/nested/deeper.rio', randomBytes(10));
    await s3.put('data', 'big.bin', big);
    source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, listPageSize: 2 });
  });
  afterAll(async () => {
    await source?.close();
    await s3?.stop();
  });

  it('lists a prefix over several pages, sorted, without sidecars or nested keys', async () => {
    const objects = await source.list('s3://data/train/');
    expect(objects.map((object) => object.location)).toEqual(
      Array.from({ length: 7 }, (_, i) => `s3://data/train/part-${i}.rio`),
    );
    expect(objects.map((object) => object.size)).toEqual(Array.from({ length: 7 }, (_, i) => 100 + i));
    expect(objects.every((object) => object.version?.startsWith('"'))).toBe(true);
    // 7 data keys, 2 sidecars and a common prefix at 2 keys per page: several ListObjectsV2 pages.
    expect(source.stats.snapshot().requests).toBeGreaterThanOrEqual(5);
  });

  it('gives each listed object the sidecars listed next to it, with their sizes and ETags', async () => {
    const objects = await source.list('s3://data/train/');
    expect(objects[0]?.sidecars).toEqual([
      { location: 's3://data/train/part-0.rio.idx', size: 10, version: expect.stringMatching(/^"/) },
    ]);
    expect(objects[1]?.sidecars?.map((sidecar) => sidecar.location)).toEqual([
      's3://data/train/part-1.rio.index',
    ]);
    expect(objects.slice(2).map((object) => object.sidecars)).toEqual(Array.from({ length: 5 }, () => []));
    // A stat has seen no listing: it says nothing about sidecars.
    expect((await source.stat('s3://data/train/part-0.rio')).sidecars).toBeUndefined();
  });

  it('lists one object by its key, and a prefix given without its slash', async () => {
    expect((await source.list('s3://data/big.bin')).map((object) => object.location)).toEqual([
      's3://data/big.bin',
    ]);
    expect(await source.list('s3://data/train')).toHaveLength(7);
    await expect(source.list('s3://data/nothing-here')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });

  it('stats an object: size and ETag', async () => {
    const stat = await source.stat('s3://data/big.bin');
    expect(stat).toMatchObject({ location: 's3://data/big.bin', size: big.byteLength });
    expect(stat.version).toMatch(/^"[0-9a-f]+"$/);
  });

  it('reads ranges byte-identical to the upload, into a caller buffer too', async () => {
    const stat = await source.stat('s3://data/big.bin');
    for (const [offset, length] of [
      [0, 1],
      [0, big.byteLength],
      [12_345, 100_000],
      [big.byteLength - 7, 7],
    ] as const) {
      const bytes = await source.readRange(stat, offset, length);
      expect(Buffer.from(bytes).equals(big.subarray(offset, offset + length))).toBe(true);
    }
    const into = new Uint8Array(64);
    const bytes = await source.readRange(stat, 1000, 50, { into });
    expect(bytes.buffer).toBe(into.buffer);
    expect(Buffer.from(bytes).equals(big.subarray(1000, 1050))).toBe(true);
    await expect(source.readRange(stat, big.byteLength - 1, 2)).rejects.toThrow(RangeError);
  });

  it('fails loudly, naming the object, when it was replaced since stat (s3rver ignores If-Match)', async () => {
    await s3.put('data', 'replaced.bin', randomBytes(1000));
    const stat = await source.stat('s3://data/replaced.bin');
    await s3.put('data', 'replaced.bin', randomBytes(1000));
    const failure = await source.readRange(stat, 0, 100).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(RemoteError);
    expect(failure).toMatchObject({ code: 'CHANGED', url: 's3://data/replaced.bin' });
    expect((failure as Error).message).toMatch(
      /^CHANGED: bytes 0-99 of s3:\/\/data\/replaced\.bin: .*replaced/,
    );
  });

  it('gives one clear line for credentials the server does not know, without the secret', async () => {
    const wrong = new S3ByteSource({
      endpoint: s3.endpoint,
      credentials: { accessKeyId: 'WRONG-KEY-ID', secretAccessKey: 'very-secret-value' },
    });
    const failure = await wrong.stat('s3://data/big.bin').catch((error: unknown) => error);
    await wrong.close();
    expect(failure).toMatchObject({ code: 'ACCESS_DENIED', status: 403 });
    const message = (failure as Error).message;
    expect(message).toMatch(/^ACCESS_DENIED: s3:\/\/data\/big\.bin: stat failed: 403/);
    expect(message).not.toContain('\n');
    expect(message).not.toContain('very-secret-value');
  });

  it('sends unsigned requests when anonymous', async () => {
    const proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    const anonymous = new S3ByteSource({ endpoint: proxy.endpoint, anonymous: true });
    const signed = new S3ByteSource({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS });
    try {
      await anonymous.stat('s3://data/big.bin');
      await signed.stat('s3://data/big.bin');
      expect(proxy.requests.map((request) => request.headers.authorization !== undefined)).toEqual([
        false,
        true,
      ]);
    } finally {
      await anonymous.close();
      await signed.close();
      await proxy.close();
    }
  });

  it('takes the endpoint from AWS_ENDPOINT_URL_S3 with path-style addressing, and keeps the SDK warning quiet', async () => {
    const script = `
      const { S3ByteSource } = await import(${JSON.stringify(new URL('../dist/s3/s3-byte-source.js', import.meta.url).href)});
      const source = new S3ByteSource();
      const stat = await source.stat('s3://data/big.bin');
      process.stdout.write(String(stat.size));
      await source.close();`;
    const { stdout, stderr } = await run(process.execPath, ['--input-type=module', '-e', script], {
      cwd: fileURLToPath(new URL('..', import.meta.url)),
      env: {
        PATH: process.env.PATH,
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
      },
    });
    expect(stdout).toBe(String(big.byteLength));
    expect(stderr).not.toContain('NodeVersionSupportWarning');
  });
});
