import { createHash, randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ObjectStat } from '../src/byte-source.js';
import { S3ByteSource } from '../src/s3/s3-byte-source.js';
import { FaultProxy } from './support/fault-proxy.js';
import { ForwardProxy } from './support/forward-proxy.js';
import { S3RVER_CREDENTIALS, type S3rverProcess, startS3rver } from './support/s3rver-process.js';
import { type ChildOutcome, childBaseEnv, makeCertificates, runModuleInChild } from './support/test-ca.js';

/** The built package: reads run in a child process, since Node reads NODE_EXTRA_CA_CERTS only at start. */
const storageDist = new URL('../dist/index.js', import.meta.url).href;

/** What the child is asked to read: the object's stat (no HEAD), ranges in order, each `[offset, length]`. */
interface ReadJob {
  readonly endpoint: string;
  readonly stat: ObjectStat;
  readonly ranges: readonly (readonly [number, number])[];
  /** Ranges read at once (default 1: one after another). */
  readonly parallel?: number;
  /** More options of the source (`directRanges`, `stallTimeoutMs`). */
  readonly options?: { readonly directRanges?: boolean; readonly stallTimeoutMs?: number };
}

/**
 * The child: reads the job's ranges with S3ByteSource, prints the sha256 of their bytes in order and
 * the source's retries by cause as JSON; on failure prints the error's message to stderr, exits 1.
 */
const READER = `
import { createHash } from 'node:crypto';
import { S3ByteSource } from ${JSON.stringify(storageDist)};
const job = JSON.parse(process.argv[1]);
const source = new S3ByteSource({
  endpoint: job.endpoint,
  credentials: ${JSON.stringify(S3RVER_CREDENTIALS)},
  baseDelayMs: 1,
  maxDelayMs: 5,
  maxAttempts: 3,
  ...job.options,
});
try {
  const parts = [];
  for (let at = 0; at < job.ranges.length; at += job.parallel ?? 1) {
    const batch = job.ranges.slice(at, at + (job.parallel ?? 1));
    parts.push(...(await Promise.all(batch.map(([offset, length]) => source.readRange(job.stat, offset, length)))));
  }
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  process.stdout.write(JSON.stringify({ sha256: hash.digest('hex'), retries: source.stats.snapshot().retries }));
} catch (error) {
  process.stderr.write(error.message + '\\n');
  process.exitCode = 1;
} finally {
  await source.close();
}
`;

/**
 * The child: a TLS server sends 200 000 bytes at once; `openReaderSocket` hands them to a reader
 * whose buffer is 1000 bytes and that says stop every 7th call, resuming a millisecond later. Prints
 * whether the bytes came whole and in order, the largest count, and the stops.
 */
const CHUNK_READER = `
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:tls';
import { openReaderSocket } from ${JSON.stringify(new URL('../dist/s3/direct-socket.js', import.meta.url).href)};
const payload = randomBytes(200_000);
const server = createServer(JSON.parse(process.argv[1]), (socket) => socket.end(payload));
server.listen(0, '127.0.0.1');
await once(server, 'listening');
const buffer = new Uint8Array(1000);
const received = [];
let calls = 0;
let largest = 0;
let stops = 0;
const endpoint = { protocol: 'https:', hostname: '127.0.0.1', port: server.address().port };
const { socket, resume } = openReaderSocket(endpoint, {
  buffer: () => buffer,
  callback: (count, into) => {
    calls++;
    largest = Math.max(largest, count);
    received.push(Buffer.from(into.subarray(0, count)));
    if (calls % 7 !== 0) return true;
    stops++;
    setTimeout(resume, 1);
    return false;
  },
});
await once(socket, 'end');
server.close();
process.stdout.write(JSON.stringify({ whole: Buffer.concat(received).equals(payload), largest, stops }));
`;

// Ranged GETs to an https:// endpoint go over the S3 source's own TLS connections (ALPN http/1.1,
// which the SDK's handler does not offer, so the proxy's handshakes tell the two paths apart):
// s3rver behind a TLS-terminating fault proxy whose certificate a test CA signs.
describe('S3ByteSource ranged GETs over its own TLS connections', () => {
  let directory: string;
  let caFile: string;
  let otherCaFile: string;
  let serverKeys: { readonly key: string; readonly cert: string };
  let s3: S3rverProcess;
  let proxy: FaultProxy;
  let stat: ObjectStat;
  const data = randomBytes(3 * 1024 * 1024 + 17);
  const sequential: [number, number][] = Array.from({ length: 20 }, (_, i) => [
    i * 150_001,
    Math.min(200_000, data.byteLength - i * 150_001),
  ]);

  const sha256Of = (ranges: readonly (readonly [number, number])[]): string => {
    const hash = createHash('sha256');
    for (const [offset, length] of ranges) hash.update(data.subarray(offset, offset + length));
    return hash.digest('hex');
  };

  const read = (job: Partial<ReadJob>, env: NodeJS.ProcessEnv = {}): Promise<ChildOutcome> =>
    runModuleInChild(
      READER,
      [JSON.stringify({ endpoint: proxy.endpoint, stat, ranges: sequential, ...job })],
      {
        ...childBaseEnv(),
        NODE_EXTRA_CA_CERTS: caFile,
        ...env,
      },
    );

  /** The direct path's connections since `from`: handshakes that agreed on ALPN http/1.1. */
  const directHandshakes = (from: number): number =>
    proxy.handshakes.slice(from).filter((handshake) => handshake.alpnProtocol === 'http/1.1').length;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'edl-s3-tls-'));
    const certificates = await makeCertificates(directory);
    caFile = certificates.caFile;
    serverKeys = { key: certificates.key, cert: certificates.cert };
    await mkdir(join(directory, 'other'));
    otherCaFile = (await makeCertificates(join(directory, 'other'))).caFile;
    s3 = await startS3rver();
    await s3.createBucket('tls');
    await s3.put('tls', 'data.bin', data);
    proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port), certificates);
    // Stat'ed over s3rver's plain endpoint: this process does not trust the test CA.
    const plain = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
    stat = await plain.stat('s3://tls/data.bin');
    await plain.close();
  });
  afterAll(async () => {
    await proxy?.close();
    await s3?.stop();
    if (directory !== undefined) await rm(directory, { recursive: true, force: true });
  });

  it("copies a TLS socket's chunks into the reader's buffer as onread does: at most its length, stop and resume", async () => {
    const outcome = await runModuleInChild(CHUNK_READER, [JSON.stringify(serverKeys)], {
      ...childBaseEnv(),
      NODE_EXTRA_CA_CERTS: caFile,
    });
    expect(outcome.stderr).toBe('');
    const result = JSON.parse(outcome.stdout) as { whole: boolean; largest: number; stops: number };
    expect(result.whole).toBe(true);
    expect(result.largest).toBe(1000);
    // At least one stop per 7 000 bytes; more calls when chunk ends cut a 1000-byte read short.
    expect(result.stops).toBeGreaterThanOrEqual(Math.floor(200 / 7));
  });

  it('reads ranges over one kept-alive TLS connection, byte-identical to the SDK path', async () => {
    const handshakes = proxy.handshakes.length;
    const requests = proxy.requests.length;
    const direct = await read({});
    expect(direct).toEqual({
      code: 0,
      stdout: expect.stringContaining(`"sha256":"${sha256Of(sequential)}"`),
      stderr: '',
    });
    expect(proxy.handshakes.length - handshakes).toBe(1);
    expect(directHandshakes(handshakes)).toBe(1);
    const gets = proxy.requests.slice(requests);
    expect(gets).toHaveLength(20);
    expect(gets.every((get) => get.method === 'GET' && get.headers['if-match'] === stat.version)).toBe(true);
    expect(gets[1]?.headers.range).toBe('bytes=150001-350000');

    const viaSdk = await read({ options: { directRanges: false } });
    expect(viaSdk).toEqual(direct);
    expect(directHandshakes(handshakes)).toBe(1);
  });

  it('reads ranges in parallel, a TLS connection each, and names the host in SNI', async () => {
    const ranges = Array.from({ length: 16 }, (_, i): [number, number] => [i * 196_608, 196_608]);
    const handshakes = proxy.handshakes.length;
    const endpoint = proxy.endpoint.replace('127.0.0.1', 'localhost');
    const direct = await read({ endpoint, ranges, parallel: 8 });
    expect(direct.stdout).toContain(`"sha256":"${sha256Of(ranges)}"`);
    const seen = proxy.handshakes.slice(handshakes);
    expect(seen).toHaveLength(8);
    expect(seen.every((handshake) => handshake.servername === 'localhost')).toBe(true);
    expect(directHandshakes(handshakes)).toBe(8);
  });

  it('is switched off by EDL_S3_DIRECT_RANGES=0: every GET through the SDK handler, same bytes', async () => {
    const handshakes = proxy.handshakes.length;
    const requests = proxy.requests.length;
    const viaSdk = await read({}, { EDL_S3_DIRECT_RANGES: '0' });
    expect(viaSdk.stdout).toContain(`"sha256":"${sha256Of(sequential)}"`);
    expect(proxy.requests.length - requests).toBe(20);
    expect(proxy.handshakes.length - handshakes).toBeGreaterThan(0);
    expect(directHandshakes(handshakes)).toBe(0);
  });

  it('keeps HTTPS_PROXY on the SDK path: TLS inside the tunnel, same bytes', async () => {
    const forward = await ForwardProxy.start();
    try {
      const handshakes = proxy.handshakes.length;
      const viaProxy = await read({}, { HTTPS_PROXY: forward.url, NO_PROXY: '', no_proxy: '' });
      expect(viaProxy.stdout).toContain(`"sha256":"${sha256Of(sequential)}"`);
      expect(forward.requests.length).toBeGreaterThan(0);
      expect(forward.requests.every((seen) => seen.method === 'CONNECT')).toBe(true);
      expect(directHandshakes(handshakes)).toBe(0);
    } finally {
      await forward.close();
    }
  });

  it('resumes a body reset mid-read from the byte where it broke, byte-identical', async () => {
    const ranges: [number, number][] = [[1_000, 1_500_000]];
    const handshakes = proxy.handshakes.length;
    const requests = proxy.requests.length;
    proxy.inject([{ kind: 'reset', afterBytes: 1_000_000 }]);
    const outcome = await read({ ranges });
    expect(proxy.pendingFaults).toBe(0);
    expect(JSON.parse(outcome.stdout)).toMatchObject({
      sha256: sha256Of(ranges),
      retries: { 'connection-reset': 1 },
    });
    // Both GETs over the direct path: the reset connection, then a new one.
    expect(directHandshakes(handshakes)).toBe(2);
    const gets = proxy.requests.slice(requests);
    expect(gets).toHaveLength(2);
    // Resumed past the range's start, and no further than the proxy forwarded (a reset drops what
    // the client had not read yet).
    const resumedAt = Number(/^bytes=(\d+)-1500999$/.exec(gets[1]?.headers.range ?? '')?.[1]);
    expect(resumedAt).toBeGreaterThan(1_000);
    expect(resumedAt).toBeLessThan(1_000 + 1_000_000);
  });

  it('abandons a stalled body after the stall timeout and resumes it, byte-identical', async () => {
    const ranges: [number, number][] = [[0, 1_200_000]];
    const handshakes = proxy.handshakes.length;
    proxy.inject([{ kind: 'stall', afterBytes: 300_000 }]);
    const outcome = await read({ ranges, options: { stallTimeoutMs: 300 } });
    expect(proxy.pendingFaults).toBe(0);
    expect(JSON.parse(outcome.stdout)).toMatchObject({
      sha256: sha256Of(ranges),
      retries: { 'stalled-body': 1 },
    });
    expect(directHandshakes(handshakes)).toBe(2);
  });

  it('fails a replaced object (ETag mismatch) with the SDK path CHANGED error, naming the object', async () => {
    const replaced: ObjectStat = { ...stat, version: '"0123456789abcdef0123456789abcdef"' };
    const handshakes = proxy.handshakes.length;
    const direct = await read({ stat: replaced, ranges: [[0, 10]] });
    expect(directHandshakes(handshakes)).toBe(1);
    expect(direct.code).toBe(1);
    // s3rver ignores If-Match: the answer's own ETag is checked against the pinned one.
    expect(direct.stderr).toMatch(/^CHANGED: bytes 0-9 of s3:\/\/tls\/data\.bin: the object was replaced/);
    expect(await read({ stat: replaced, ranges: [[0, 10]], options: { directRanges: false } })).toEqual(
      direct,
    );
  });

  it('fails an untrusted certificate with one line naming the endpoint, never a credential', async () => {
    const handshakes = proxy.handshakes.length;
    for (const env of [{ NODE_EXTRA_CA_CERTS: otherCaFile }, { NODE_EXTRA_CA_CERTS: undefined }]) {
      const outcome = await read({ ranges: [[0, 10]] }, env);
      expect(outcome.code).toBe(1);
      expect(outcome.stdout).toBe('');
      const lines = outcome.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain('s3://tls/data.bin');
      expect(lines[0]).toContain(`TLS to ${proxy.endpoint} failed`);
      expect(lines[0]).toMatch(/certificate/i);
      expect(lines[0]).not.toContain(S3RVER_CREDENTIALS.secretAccessKey);
    }
    expect(proxy.handshakes.length).toBe(handshakes);
  });
});
