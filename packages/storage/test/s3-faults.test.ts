import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ObjectStat } from '../src/byte-source.js';
import { S3ByteSource, type S3ByteSourceOptions } from '../src/s3/s3-byte-source.js';
import { FaultProxy } from './support/fault-proxy.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';

// Reads from s3rver through the fault-injecting proxy: each fault must be survived with identical
// bytes, and counted by its cause.
describe('S3ByteSource through faults', () => {
  let s3: S3rverProcess;
  let proxy: FaultProxy;
  let stat: ObjectStat;
  const data = randomBytes(512 * 1024);
  const sources: S3ByteSource[] = [];

  const sourceWith = (options: S3ByteSourceOptions = {}): S3ByteSource => {
    const source = new S3ByteSource({
      endpoint: proxy.endpoint,
      credentials: S3RVER_CREDENTIALS,
      baseDelayMs: 5,
      maxDelayMs: 50,
      ...options,
    });
    sources.push(source);
    return source;
  };

  beforeAll(async () => {
    s3 = await startS3rver();
    await s3.createBucket('faults');
    await s3.put('faults', 'data.bin', data);
    proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
    stat = await sourceWith().stat('s3://faults/data.bin');
  });
  beforeEach(() => {
    proxy.latencyMs = 0;
    proxy.inject([]);
  });
  afterAll(async () => {
    for (const source of sources) await source.close();
    await proxy?.close();
    await s3?.stop();
  });

  const expectIdentical = (bytes: Uint8Array, offset: number, length: number): void => {
    expect(bytes.byteLength).toBe(length);
    expect(Buffer.from(bytes).equals(data.subarray(offset, offset + length))).toBe(true);
  };

  it('resumes ranges whose connections are reset mid-body, keeping the bytes received', async () => {
    const source = sourceWith();
    proxy.inject([
      { kind: 'reset', afterBytes: 100_000 },
      { kind: 'reset', afterBytes: 150_000 },
    ]);
    const bytes = await source.readRange(stat, 1000, 400_000);
    expectIdentical(bytes, 1000, 400_000);
    const stats = source.stats.snapshot();
    expect(stats.retries['connection-reset']).toBe(2);
    expect(proxy.pendingFaults).toBe(0);
    // Resumed, not restarted: well under twice the range crossed the wire.
    expect(stats.bytes).toBeLessThan(400_000 + 2 * 1000);
    const ranges = proxy.requests.filter((request) => request.headers.range !== undefined).slice(-3);
    expect(ranges[0]?.headers.range).toBe('bytes=1000-400999');
    expect(Number(/bytes=(\d+)-/.exec(ranges[1]?.headers.range ?? '')?.[1])).toBeGreaterThan(1000);
    expect(ranges.every((request) => request.headers['if-match'] === stat.version)).toBe(true);
  });

  it('resumes a body cut mid-range into the same caller buffer, writing nothing past the range', async () => {
    const source = sourceWith();
    const into = new Uint8Array(300_000 + 16).fill(0xee);
    proxy.inject([{ kind: 'reset', afterBytes: 120_000 }]);
    const bytes = await source.readRange(stat, 2048, 300_000, { into });
    expect(bytes.buffer).toBe(into.buffer);
    expect(bytes.byteOffset).toBe(0);
    expectIdentical(bytes, 2048, 300_000);
    expect([...into.subarray(300_000)].every((byte) => byte === 0xee)).toBe(true);
    expect(source.stats.snapshot().retries['connection-reset']).toBe(1);
    // The retry asked only for the bytes not received.
    const ranges = proxy.requests.filter((request) => request.headers.range !== undefined).slice(-2);
    expect(Number(/bytes=(\d+)-/.exec(ranges[1]?.headers.range ?? '')?.[1])).toBeGreaterThan(2048);
  });

  it('fails a body that ends short on every attempt with one line naming the object and range', async () => {
    const source = sourceWith({ maxAttempts: 2 });
    proxy.inject([
      { kind: 'end', afterBytes: 60_000 },
      { kind: 'end', afterBytes: 60_000 },
    ]);
    const failure = await source.readRange(stat, 0, 200_000).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'UNAVAILABLE', url: 's3://faults/data.bin' });
    expect((failure as Error).message).toMatch(
      /^UNAVAILABLE: bytes 0-199999 of s3:\/\/faults\/data\.bin: read gave up after 2 attempts; last: /,
    );
    expect(proxy.pendingFaults).toBe(0);
  });

  it('backs off through a burst of 503 SlowDown', async () => {
    const source = sourceWith();
    proxy.inject(
      Array.from({ length: 3 }, () => ({ kind: 'status', status: 503, code: 'SlowDown' }) as const),
    );
    expectIdentical(await source.readRange(stat, 0, data.byteLength), 0, data.byteLength);
    expect(source.stats.snapshot().retries.throttled).toBe(3);
  });

  it('abandons a stalled body after the stall timeout and reads the rest', async () => {
    const source = sourceWith({ stallTimeoutMs: 300 });
    proxy.inject([{ kind: 'stall', afterBytes: 50_000 }]);
    expectIdentical(await source.readRange(stat, 4096, 300_000), 4096, 300_000);
    const stats = source.stats.snapshot();
    expect(stats.retries['stalled-body']).toBe(1);
    expect(stats.retries['connection-reset']).toBe(0);
  });

  it('retries a request with no answer within the request timeout', async () => {
    const source = sourceWith({ requestTimeoutMs: 200 });
    proxy.latencyMs = 400;
    proxy.inject([]);
    const reading = source.readRange(stat, 0, 10);
    // Only the first request is slow: the latency is lifted once it was sent.
    await new Promise((resolve) => setTimeout(resolve, 50));
    proxy.latencyMs = 0;
    expectIdentical(await reading, 0, 10);
    expect(source.stats.snapshot().retries.timeout).toBe(1);
  });

  it('records request latency in the histogram', async () => {
    const source = sourceWith();
    proxy.latencyMs = 60;
    await source.readRange(stat, 0, 10);
    const { latency, requests } = source.stats.snapshot();
    expect(requests).toBe(1);
    expect(latency.count).toBe(1);
    expect(latency.sumMs).toBeGreaterThanOrEqual(60);
    expect(
      latency.counts.slice(0, latency.bucketBoundsMs.indexOf(50) + 1).every((count) => count === 0),
    ).toBe(true);
  });

  it('gives up after maxAttempts with one line naming the object', async () => {
    const source = sourceWith({ maxAttempts: 3 });
    proxy.inject(
      Array.from({ length: 5 }, () => ({ kind: 'status', status: 503, code: 'SlowDown' }) as const),
    );
    const failure = await source.readRange(stat, 0, 100).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'UNAVAILABLE', url: 's3://faults/data.bin', status: 503 });
    expect((failure as Error).message).toBe(
      'UNAVAILABLE: bytes 0-99 of s3://faults/data.bin: read gave up after 3 attempts; last: 503 SlowDown: injected by the test proxy',
    );
    const stats = source.stats.snapshot();
    expect(stats.retries.throttled).toBe(2);
    expect(stats.failures).toBe(1);
  });
});
