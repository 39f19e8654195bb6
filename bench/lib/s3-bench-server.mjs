/**
 * The S3 side of bench/remote-read.mjs: npm's s3rver 3.7.1 in a child process, started the way the
 * storage tests start it (packages/storage/test/support/s3rver-process.ts, which is TypeScript test
 * code and not in any dist), and a TCP proxy in front of it that adds a fixed latency to every
 * request and records each request's method and path. s3rver, the AWS SDK and @edl/storage are
 * resolved from packages/storage, whose dev dependencies they are, so bench/ needs no new ones.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const storageRequire = createRequire(new URL('../../packages/storage/package.json', import.meta.url));

/** The AWS SDK's S3 client module, as packages/storage resolves it. */
export function loadS3Client() {
  return import(storageRequire.resolve('@aws-sdk/client-s3'));
}

/** The key pair s3rver knows (its built-in account). */
export const S3RVER_ENV = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REGION: 'us-east-1',
  AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
};

/** A path-style S3 client of `endpoint` with s3rver's keys and no retries. */
export async function s3Client(endpoint) {
  const { S3Client } = await loadS3Client();
  return new S3Client({
    endpoint,
    region: S3RVER_ENV.AWS_REGION,
    forcePathStyle: true,
    credentials: {
      accessKeyId: S3RVER_ENV.AWS_ACCESS_KEY_ID,
      secretAccessKey: S3RVER_ENV.AWS_SECRET_ACCESS_KEY,
    },
    maxAttempts: 1,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

/** Starts s3rver on a free port of 127.0.0.1 with a fresh data folder; `{ endpoint, pid, version, stop }`. */
export async function startS3rver() {
  const packageJson = storageRequire.resolve('s3rver/package.json');
  const { version } = JSON.parse(readFileSync(packageJson, 'utf8'));
  const directory = mkdtempSync(join(tmpdir(), 'edl-bench-s3rver-'));
  // Its ListObjectsV2 continuation tokens are DES-encrypted: OpenSSL 3 keeps DES in its legacy provider.
  const child = spawn(
    process.execPath,
    [
      '--openssl-legacy-provider',
      join(dirname(packageJson), 'bin', 's3rver.js'),
      '-d',
      directory,
      '-a',
      '127.0.0.1',
      '-p',
      '0',
      '-s',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const port = await new Promise((resolve, reject) => {
    let output = '';
    const onData = (chunk) => {
      output += chunk.toString();
      const match = /listening on [\d.]+:(\d+)/.exec(output);
      if (match !== null) resolve(Number(match[1]));
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`s3rver exited with ${code}: ${output}`)));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    pid: child.pid,
    version,
    async stop() {
      const exited = once(child, 'exit');
      child.kill('SIGTERM');
      await exited;
      rmSync(directory, { recursive: true, force: true });
    },
  };
}

/**
 * A TCP proxy on a free port of 127.0.0.1 in front of `targetPort`: each HTTP/1.1 request head is
 * parsed (requests are forwarded in order per connection), recorded as `{ method, path }` in
 * `requests`, and forwarded `latencyMs` later. Answers pass through untouched.
 */
export async function startDelayProxy(targetPort) {
  const sockets = new Set();
  const track = (socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  };
  const proxy = { latencyMs: 0, requests: [], endpoint: '', close: undefined };
  const server = createServer((client) => {
    const upstream = connect(targetPort, '127.0.0.1');
    track(client);
    track(upstream);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    upstream.pipe(client);
    let pending = Buffer.alloc(0);
    let queue = Promise.resolve();
    client.on('data', (data) => {
      pending = Buffer.concat([pending, data]);
      for (;;) {
        const request = takeRequest(pending);
        if (request === undefined) break;
        pending = pending.subarray(request.length);
        const bytes = Buffer.from(request.bytes);
        queue = queue.then(async () => {
          proxy.requests.push(request.seen);
          if (proxy.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, proxy.latencyMs));
          upstream.write(bytes);
        });
      }
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  proxy.endpoint = `http://127.0.0.1:${server.address().port}`;
  proxy.close = async () => {
    for (const socket of sockets) socket.destroy();
    server.close();
    await once(server, 'close');
  };
  return proxy;
}

/** The first whole request in `buffer` (head plus `Content-Length` body), or undefined. */
function takeRequest(buffer) {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const head = buffer.subarray(0, end).toString('latin1');
  const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(head)?.[1] ?? 0);
  const total = end + 4 + length;
  if (buffer.byteLength < total) return undefined;
  const [method = '', path = ''] = head.slice(0, head.indexOf('\r\n')).split(' ');
  return {
    bytes: buffer.subarray(0, total),
    length: total,
    seen: { method, path: decodeURIComponent(path) },
  };
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux); NaN elsewhere. */
export function processCpuSeconds(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    // utime and stime are fields 14 and 15 of stat(5), in clock ticks (100 per second on Linux).
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return Number.NaN;
  }
}
