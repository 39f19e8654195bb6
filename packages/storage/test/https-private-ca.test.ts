import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ForwardProxy } from './support/forward-proxy.js';
import { RangeHttpServer } from './support/range-http-server.js';
import { type ChildOutcome, failureLine, makeCertificates, runModuleInChild } from './support/test-ca.js';

/** The built package: the read runs in a child process, since Node reads NODE_EXTRA_CA_CERTS only at start. */
const storageDist = new URL('../dist/index.js', import.meta.url).href;

/**
 * The child: lists `url`, reads it whole with HttpByteSource, prints the bytes' sha256; on failure
 * prints the error's message to stderr and exits 1.
 */
const READER = `
import { HttpByteSource } from ${JSON.stringify(storageDist)};
const url = process.argv[1];
const source = new HttpByteSource({ baseDelayMs: 5, maxAttempts: 2 });
try {
  const [stat] = await source.list(url);
  const bytes = await source.readRange(stat, 0, stat.size);
  const { createHash } = await import('node:crypto');
  process.stdout.write(createHash('sha256').update(bytes).digest('hex'));
} catch (error) {
  process.stderr.write(error.message + '\\n');
  process.exitCode = 1;
}
`;

function readInChild(url: string, env: NodeJS.ProcessEnv): Promise<ChildOutcome> {
  return runModuleInChild(READER, [url], env);
}

describe('HttpByteSource over HTTPS with a private CA (NODE_EXTRA_CA_CERTS)', () => {
  let directory: string;
  let caFile: string;
  let server: RangeHttpServer;
  const data = randomBytes(150_000);
  let url: string;
  // The child's environment without any CA bundle or proxy of the parent's.
  const { NODE_EXTRA_CA_CERTS: _ca, HTTPS_PROXY: _proxy, https_proxy: _lowerProxy, ...baseEnv } = process.env;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'edl-https-ca-'));
    const certificates = await makeCertificates(directory);
    caFile = certificates.caFile;
    server = await RangeHttpServer.start({ key: certificates.key, cert: certificates.cert });
    server.put('/data/part-0.rio', data);
    url = `${server.origin}/data/part-0.rio`;
  });

  afterAll(async () => {
    await server?.close();
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });

  it('reads the object byte-identical when the CA is given through NODE_EXTRA_CA_CERTS', async () => {
    expect(url.startsWith('https://127.0.0.1:')).toBe(true);
    const outcome = await readInChild(url, { ...baseEnv, NODE_EXTRA_CA_CERTS: caFile });
    expect(outcome).toEqual({ code: 0, stdout: createHash('sha256').update(data).digest('hex'), stderr: '' });
  });

  it('fails with one line naming the URL when the CA is not trusted', async () => {
    const outcome = await readInChild(url, baseEnv);
    expect(failureLine(outcome, url)).toMatch(/certificate/i);
  });

  it("reads through HTTPS_PROXY: TLS to the server inside the proxy's CONNECT tunnel", async () => {
    const proxy = await ForwardProxy.start();
    proxy.credentials = 'reader:tunnel-pass';
    try {
      const outcome = await readInChild(url, {
        ...baseEnv,
        NODE_EXTRA_CA_CERTS: caFile,
        HTTPS_PROXY: proxy.url.replace('http://', 'http://reader:tunnel-pass@'),
        NO_PROXY: '',
        no_proxy: '',
      });
      expect(outcome).toEqual({
        code: 0,
        stdout: createHash('sha256').update(data).digest('hex'),
        stderr: '',
      });
      expect(proxy.requests.length).toBeGreaterThan(0);
      for (const seen of proxy.requests) {
        expect(seen).toEqual({
          method: 'CONNECT',
          target: new URL(url).host,
          credentials: 'reader:tunnel-pass',
        });
      }
    } finally {
      await proxy.close();
    }
  });
});
