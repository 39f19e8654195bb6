import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HttpByteSource, type HttpByteSourceOptions } from '../src/http/http-byte-source.js';
import { FaultProxy } from './support/fault-proxy.js';
import { RangeHttpServer } from './support/range-http-server.js';

describe('HttpByteSource against a node:http server', () => {
  let server: RangeHttpServer;
  const data = randomBytes(200_000);
  const warnings: string[] = [];
  const sourceWith = (options: HttpByteSourceOptions = {}) =>
    new HttpByteSource({ baseDelayMs: 5, onWarning: (message) => warnings.push(message), ...options });

  beforeAll(async () => {
    server = await RangeHttpServer.start();
  });
  afterAll(() => server.close());

  it('stats and reads ranges pinned on the ETag, byte-identical', async () => {
    server.put('/etag.bin', data);
    const source = sourceWith();
    const url = `${server.origin}/etag.bin`;
    const [stat] = await source.list(url);
    expect(stat).toMatchObject({ location: url, size: data.byteLength });
    expect(stat?.version).toMatch(/^"[0-9a-f]+-\d+"$/);
    if (stat === undefined) return;
    for (const [offset, length] of [
      [0, data.byteLength],
      [777, 12_345],
      [data.byteLength - 1, 1],
    ] as const) {
      expect(
        Buffer.from(await source.readRange(stat, offset, length)).equals(
          data.subarray(offset, offset + length),
        ),
      ).toBe(true);
    }
  });

  it('fails with CHANGED when the server answers 412 to If-Match after a replacement', async () => {
    server.put('/replaced.bin', data);
    const source = sourceWith();
    const stat = await source.stat(`${server.origin}/replaced.bin`);
    server.put('/replaced.bin', randomBytes(data.byteLength));
    const failure = await source.readRange(stat, 10, 20).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'CHANGED', status: 412 });
    expect((failure as Error).message).toBe(
      `CHANGED: bytes 10-29 of ${server.origin}/replaced.bin: the object changed since it was stat'ed (412: Precondition Failed); restart from a fresh listing`,
    );
  });

  it('pins on Last-Modified and size without an ETag', async () => {
    server.put('/dated.bin', data, { etag: false });
    const source = sourceWith();
    const stat = await source.stat(`${server.origin}/dated.bin`);
    expect(stat.version).toMatch(/^Last-Modified: /);
    expect(Buffer.from(await source.readRange(stat, 5, 50)).equals(data.subarray(5, 55))).toBe(true);
    server.put('/dated.bin', randomBytes(data.byteLength), { etag: false });
    await expect(source.readRange(stat, 5, 50)).rejects.toMatchObject({ code: 'CHANGED' });
  });

  it('warns once when an object cannot be pinned, and still reads it and checks its size', async () => {
    server.put('/unpinned.bin', data, { etag: false, lastModified: false });
    const source = sourceWith();
    const url = `${server.origin}/unpinned.bin`;
    const before = warnings.length;
    const stat = await source.stat(url);
    await source.stat(url);
    expect(stat.version).toBeUndefined();
    expect(warnings.slice(before)).toHaveLength(1);
    expect(warnings.at(-1)).toContain(`${url} cannot be pinned`);
    expect(Buffer.from(await source.readRange(stat, 0, 100)).equals(data.subarray(0, 100))).toBe(true);
    server.put('/unpinned.bin', randomBytes(100), { etag: false, lastModified: false });
    await expect(source.readRange(stat, 0, 100)).rejects.toMatchObject({ code: 'CHANGED' });
  });

  it('reads the right bytes from a server that ignores Range', async () => {
    server.put('/no-ranges.bin', data, { ranges: false });
    const source = sourceWith();
    const stat = await source.stat(`${server.origin}/no-ranges.bin`);
    expect(
      Buffer.from(await source.readRange(stat, 150_000, 1000)).equals(data.subarray(150_000, 151_000)),
    ).toBe(true);
  });

  it('names a missing object, never the user info or query of its URL', async () => {
    const source = sourceWith();
    const url = new URL(`${server.origin}/missing.bin?X-Amz-Signature=secret-signature`);
    url.username = 'user';
    url.password = 'secret-password';
    const failure = await source.stat(url.href).catch((error: unknown) => error);
    expect(failure).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    const message = (failure as Error).message;
    expect(message).toMatch(/^NOT_FOUND: http:\/\/…@127\.0\.0\.1:\d+\/missing\.bin\?…: stat failed: 404/);
    expect(message).not.toMatch(/secret/);
  });

  it('recovers from a reset and a 503 through the fault proxy', async () => {
    server.put('/proxied.bin', data);
    const proxy = await FaultProxy.start(Number(new URL(server.origin).port));
    try {
      const source = sourceWith();
      const stat = await source.stat(`${proxy.endpoint}/proxied.bin`);
      proxy.inject([
        { kind: 'reset', afterBytes: 60_000 },
        { kind: 'status', status: 503, code: 'SlowDown' },
      ]);
      expect(
        Buffer.from(await source.readRange(stat, 100, 150_000)).equals(data.subarray(100, 150_100)),
      ).toBe(true);
      const { retries } = source.stats.snapshot();
      expect(retries['connection-reset']).toBe(1);
      expect(retries.throttled).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});
