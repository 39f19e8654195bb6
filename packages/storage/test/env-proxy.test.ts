// HTTPS_PROXY / HTTP_PROXY / NO_PROXY for the S3 client and the http(s) byte source, against a real
// forward proxy (support/forward-proxy.ts) that records what passed through it. The variables are
// set before the first S3 request: the S3 client's agents are made when the SDK is loaded.
import { randomBytes } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { HttpByteSource } from '../src/http/http-byte-source.js';
import { proxyFor } from '../src/proxy/env-proxy.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { ForwardProxy } from './support/forward-proxy.js';
import { RangeHttpServer } from './support/range-http-server.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';

const VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'http_proxy', 'https_proxy', 'no_proxy'];
const saved = Object.fromEntries(VARIABLES.map((name) => [name, process.env[name]]));
const data = randomBytes(300_000);

let proxy: ForwardProxy;
let http: RangeHttpServer;
let s3: S3rverProcess;

function useProxy(noProxy = ''): void {
  for (const name of VARIABLES) delete process.env[name];
  process.env.HTTP_PROXY = proxy.url.replace('http://', 'http://reader:proxy-pass-word@');
  process.env.HTTPS_PROXY = process.env.HTTP_PROXY;
  process.env.NO_PROXY = noProxy;
}

beforeAll(async () => {
  proxy = await ForwardProxy.start();
  proxy.credentials = 'reader:proxy-pass-word';
  http = await RangeHttpServer.start();
  http.put('/d/a.bin', data);
  s3 = await startS3rver();
  await s3.createBucket('proxied');
  await s3.put('proxied', 'a.bin', data);
  useProxy();
}, 60_000);

afterEach(() => {
  proxy.requests.length = 0;
  proxy.credentials = 'reader:proxy-pass-word';
  useProxy();
});

afterAll(async () => {
  for (const name of VARIABLES) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
  await s3?.stop();
  await http?.close();
  await proxy?.close();
});

/** Every request the proxy saw was a tunnel to 127.0.0.1:`port`, with the proxy URL's credentials. */
function expectTunnelledTo(port: string): void {
  expect(proxy.requests.length).toBeGreaterThan(0);
  for (const seen of proxy.requests) {
    expect(seen).toEqual({
      method: 'CONNECT',
      target: `127.0.0.1:${port}`,
      credentials: 'reader:proxy-pass-word',
    });
  }
}

function s3Source(options: { maxAttempts?: number } = {}): S3ByteSource {
  return new S3ByteSource({
    endpoint: s3.endpoint,
    credentials: S3RVER_CREDENTIALS,
    baseDelayMs: 1,
    ...options,
  });
}

async function readAll(source: HttpByteSource | S3ByteSource, location: string): Promise<Buffer> {
  const stat = await source.stat(location);
  return Buffer.from(await source.readRange(stat, 0, stat.size));
}

describe('proxy variables', () => {
  it('are read as Node users set them: lower case first, bare host:port, NO_PROXY forms', () => {
    const env = {
      HTTPS_PROXY: 'http://upper:1',
      https_proxy: 'proxy.corp:3128',
      NO_PROXY: 'internal.corp, .svc.cluster.local,10.0.0.7,minio:9000',
    };
    expect(proxyFor(new URL('https://s3.amazonaws.com/b/k'), env)?.href).toBe('http://proxy.corp:3128/');
    expect(proxyFor(new URL('http://s3.amazonaws.com/b/k'), env)).toBeUndefined();
    for (const exempt of [
      'https://internal.corp/x',
      'https://a.internal.corp/x',
      'https://rgw.ceph.svc.cluster.local/x',
      'https://10.0.0.7/x',
      'https://minio:9000/x',
    ]) {
      expect(proxyFor(new URL(exempt), env), exempt).toBeUndefined();
    }
    expect(proxyFor(new URL('https://minio:9001/x'), env)?.host).toBe('proxy.corp:3128');
    expect(proxyFor(new URL('https://notinternal.corp/x'), env)?.host).toBe('proxy.corp:3128');
    expect(proxyFor(new URL('https://any/x'), { ...env, NO_PROXY: '*' })).toBeUndefined();
  });
});

describe('the http(s) byte source behind HTTP_PROXY', () => {
  it('reads through the proxy, with its credentials, byte-identical', async () => {
    const source = new HttpByteSource({ scheme: 'http' });
    expect((await readAll(source, `${http.origin}/d/a.bin`)).equals(data)).toBe(true);
    const port = new URL(http.origin).port;
    expectTunnelledTo(port);
  });

  it('goes direct to a NO_PROXY host', async () => {
    useProxy(`localhost,127.0.0.1:${new URL(http.origin).port}`);
    const source = new HttpByteSource({ scheme: 'http' });
    expect((await readAll(source, `${http.origin}/d/a.bin`)).equals(data)).toBe(true);
    expect(proxy.requests).toEqual([]);
  });

  it('a proxy refusing its credentials fails with one line naming the URL, never the password', async () => {
    proxy.credentials = 'reader:another-password';
    // A server of its own: the agents keep tunnels open, and an open one is not asked again.
    const server = await RangeHttpServer.start();
    server.put('/d/b.bin', data);
    try {
      const source = new HttpByteSource({ scheme: 'http', maxAttempts: 2, baseDelayMs: 1 });
      const failure = (await source
        .stat(`${server.origin}/d/b.bin`)
        .catch((error: unknown) => error)) as Error;
      expect(failure).toBeInstanceOf(Error);
      expect(failure.message).toMatch(new RegExp(`^[A-Z_]+: ${server.origin}/d/b\\.bin: stat failed: .*407`));
      expect(failure.message).not.toContain('\n');
      expect(failure.message).not.toContain('proxy-pass-word');
      expect(JSON.stringify(failure, Object.getOwnPropertyNames(failure))).not.toContain('proxy-pass-word');
    } finally {
      await server.close();
    }
  });
});

describe('the S3 client behind HTTP_PROXY', () => {
  it('reads through the proxy, with its credentials, byte-identical; a NO_PROXY endpoint goes direct', async () => {
    const port = new URL(s3.endpoint).port;
    const source = s3Source();
    try {
      expect((await readAll(source, 's3://proxied/a.bin')).equals(data)).toBe(true);
      expectTunnelledTo(port);
    } finally {
      await source.close();
    }
    proxy.requests.length = 0;
    // NO_PROXY is read at each new connection: a new client's connections go direct.
    useProxy(`127.0.0.1:${port}`);
    const direct = s3Source();
    try {
      expect((await readAll(direct, 's3://proxied/a.bin')).equals(data)).toBe(true);
      expect(proxy.requests).toEqual([]);
    } finally {
      await direct.close();
    }
  });

  it('a proxy refusing its credentials fails with one line naming the object, never the password', async () => {
    proxy.credentials = 'reader:another-password';
    const source = s3Source({ maxAttempts: 2 });
    try {
      const failure = (await source.stat('s3://proxied/a.bin').catch((error: unknown) => error)) as Error;
      expect(failure.message).toMatch(/^[A-Z_]+: s3:\/\/proxied\/a\.bin: stat /);
      expect(failure.message).not.toContain('\n');
      expect(failure.message).not.toContain('proxy-pass-word');
      expect(JSON.stringify(failure, Object.getOwnPropertyNames(failure))).not.toContain('proxy-pass-word');
    } finally {
      await source.close();
    }
  });
});
