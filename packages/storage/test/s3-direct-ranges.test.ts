import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStat } from '../src/byte-source.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { FaultProxy } from './support/fault-proxy.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';

// The S3 source's ranged GETs go over its own kept-alive connections, whose bodies the socket
// writes straight into the caller's buffer (DirectRangeHandler); the proxy in front of s3rver
// counts the connections and sees each request.
describe('S3ByteSource ranged GETs over its own connections', () => {
  let s3: S3rverProcess;
  let proxy: FaultProxy;
  let stat: ObjectStat;
  const data = randomBytes(3 * 1024 * 1024 + 17);
  const sources: S3ByteSource[] = [];

  const newSource = (): S3ByteSource => {
    const source = new S3ByteSource({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS });
    sources.push(source);
    return source;
  };

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('direct');
    await s3.put('direct', 'data.bin', data);
    proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    stat = await newSource().stat('s3://direct/data.bin');
  });
  afterAll(async () => {
    for (const source of sources) await source.close();
    await proxy?.close();
    await s3?.stop();
  });

  it('reads ranges one after another over one kept-alive connection, byte-identical', async () => {
    const source = newSource();
    await source.stat('s3://direct/data.bin');
    const before = proxy.connections;
    const into = new Uint8Array(200_000);
    for (let i = 0; i < 20; i++) {
      const offset = i * 150_001;
      const length = Math.min(200_000, data.byteLength - offset);
      const bytes = await source.readRange(stat, offset, length, { into });
      expect(bytes.buffer).toBe(into.buffer);
      expect(Buffer.from(bytes).equals(data.subarray(offset, offset + length))).toBe(true);
    }
    // One connection for the GETs (the HEAD went over the SDK's own).
    expect(proxy.connections - before).toBe(1);
    const gets = proxy.requests.slice(-20);
    expect(
      gets.every((request) => request.method === 'GET' && request.headers['if-match'] === stat.version),
    ).toBe(true);
    expect(gets[1]?.headers.range).toBe('bytes=150001-350000');
    expect(source.stats.snapshot().bytes).toBe(
      gets.reduce((sum, _, i) => sum + Math.min(200_000, data.byteLength - i * 150_001), 0),
    );
  });

  it('reads ranges in parallel, each over a connection of its own, then reuses them', async () => {
    const source = newSource();
    const before = proxy.connections;
    const read = (part: number): Promise<Uint8Array> => source.readRange(stat, part * 393_216, 393_216);
    for (let round = 0; round < 3; round++) {
      const parts = await Promise.all([0, 1, 2, 3, 4, 5, 6, 7].map(read));
      parts.forEach((bytes, part) => {
        expect(Buffer.from(bytes).equals(data.subarray(part * 393_216, (part + 1) * 393_216))).toBe(true);
      });
    }
    expect(proxy.connections - before).toBe(8);
  });

  it('sees an idle connection closed by the other side, and reads on a new one with no retry', async () => {
    const source = newSource();
    expect(Buffer.from(await source.readRange(stat, 0, 100_000)).equals(data.subarray(0, 100_000))).toBe(
      true,
    );
    const before = proxy.connections;
    proxy.dropConnections();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(Buffer.from(await source.readRange(stat, 7, 100_000)).equals(data.subarray(7, 100_007))).toBe(
      true,
    );
    expect(proxy.connections - before).toBe(1);
    expect(source.stats.snapshot().retries['connection-reset']).toBe(0);
  });

  it('an error answer to a ranged GET is read by the SDK from the same connection: NOT_FOUND naming the object', async () => {
    const source = newSource();
    await source.readRange(stat, 0, 10);
    const before = proxy.connections;
    const missing: ObjectStat = { location: 's3://direct/missing.bin', size: 100, version: stat.version };
    const failure = await source.readRange(missing, 0, 10).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failure).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    expect(String(failure)).toContain(
      'NOT_FOUND: bytes 0-9 of s3://direct/missing.bin: read failed: 404 NoSuchKey',
    );
    // The error's XML body was read whole: the connection is used again.
    expect(Buffer.from(await source.readRange(stat, 5, 10)).equals(data.subarray(5, 15))).toBe(true);
    expect(proxy.connections - before).toBe(0);
  });

  it('reads the last byte and a one-byte range, and fails a range past the end before any request', async () => {
    const source = newSource();
    const last = await source.readRange(stat, data.byteLength - 1, 1);
    expect([...last]).toEqual([data[data.byteLength - 1]]);
    const requests = proxy.requests.length;
    await expect(source.readRange(stat, data.byteLength - 1, 2)).rejects.toThrow(RangeError);
    expect(proxy.requests.length).toBe(requests);
  });
});
