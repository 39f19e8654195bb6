// The https:// object reader against a server that is not ours: Debian's nginx (support/
// nginx-process.ts), serving static files over TLS with a certificate of a test CA. Range, ETag and
// If-Match are nginx's own. The files are written and read in child processes of the built dist/
// (`pnpm run build:ts` first), since Node reads NODE_EXTRA_CA_CERTS only at start. Where nginx is not
// installed the tests are skipped with the reason printed, except in CI (CI=true), where they fail.
import { mkdir, mkdtemp, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type NginxLoggedRequest,
  type NginxProcess,
  nginxMissing,
  startNginx,
} from './support/nginx-process.js';
import { type ChildOutcome, childBaseEnv, failureLine, runModuleInChild } from './support/test-ca.js';

const recordioDist = new URL('../../recordio/dist/index.js', import.meta.url).href;
const readersDist = new URL('../../data/dist/readers/index.js', import.meta.url).href;

const FORMATS = [
  ['RecordIO', 'data.rio'],
  ['TFRecord', 'data.tfrecord'],
] as const;

/**
 * The child that writes the test files: `data.rio` (snappy, 16 KiB chunks) and `data.tfrecord` in
 * argv[1] (local), copied without a sidecar to argv[2]/plain/ and, with the sidecar index the
 * writers' upload path writes (`<file>.idx`), to argv[2]/idx/; `data.rio` also to argv[2]/replaced/,
 * for the test that writes over it.
 */
const WRITER = `
import { copyFile, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { RecordIOWriter, TFRecordWriter, uploadDataFile } from ${JSON.stringify(recordioDist)};
const [local, served] = process.argv.slice(1);
const records = (count, salt) => Array.from({ length: count }, (_, i) => {
  const record = Buffer.alloc((i * 7919 + salt) % 700, i % 251);
  for (let j = 0; j < record.length; j += 7) record[j] = (i * 31 + j + salt) & 0xff;
  return record;
});
const rio = await RecordIOWriter.create(join(local, 'data.rio'), { compressor: 'snappy', maxChunkBytes: 16 * 1024 });
rio.writeBatch(records(3000, 1));
rio.close();
const tfrecord = TFRecordWriter.create(join(local, 'data.tfrecord'));
for (const record of records(2600, 2)) tfrecord.write(record);
await tfrecord.close();
await mkdir(join(served, 'plain'));
await mkdir(join(served, 'idx'));
await mkdir(join(served, 'replaced'));
await copyFile(join(local, 'data.rio'), join(served, 'replaced', 'data.rio'));
for (const [name, format] of [['data.rio', 'recordio'], ['data.tfrecord', 'tfrecord']]) {
  await copyFile(join(local, name), join(served, 'plain', name));
  await uploadDataFile(join(local, name), join(served, 'idx', name), format);
}
`;

/**
 * The reader child: createDataReader(argv[1]) with a fresh index cache (argv[2]); every shard in
 * tasks of 200 records, each announced (prefetch) just before it is read, as a worker does. Prints
 * {records, sha256 of every record's length and bytes, remote stats}. With argv[3] (the served file
 * of argv[1]), after the first task it writes that file over with one byte changed, same size, a
 * minute newer (nginx's ETag is its mtime and size), then reads on. On failure: the error's
 * message on stderr, exit 1.
 */
const READER = `
import { createHash } from 'node:crypto';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import { createDataReader } from ${JSON.stringify(readersDist)};
const [origin, indexCacheDir, replace] = process.argv.slice(1);
const hash = createHash('sha256');
let records = 0;
try {
  const reader = await createDataReader(origin, {
    remote: { indexCacheDir, partBytes: 64 * 1024, readAheadBytes: 128 * 1024 },
  });
  for (const shard of await reader.createShards()) {
    for (let start = shard.start; start < shard.start + shard.count; start += 200) {
      const task = { shardName: shard.name, start, end: Math.min(start + 200, shard.start + shard.count) };
      reader.prefetch?.(task);
      for await (const record of reader.readRecords(task)) {
        const length = Buffer.alloc(4);
        length.writeUInt32LE(record.byteLength);
        hash.update(length).update(record);
        records++;
      }
      if (replace !== undefined && start === shard.start) {
        const bytes = await readFile(replace);
        bytes[bytes.length >> 1] ^= 0xff;
        await writeFile(replace, bytes);
        const later = new Date(Date.now() + 60_000);
        await utimes(replace, later, later);
      }
    }
  }
  const stats = reader.remoteStats?.files;
  await reader.close?.();
  process.stdout.write(JSON.stringify({ records, sha256: hash.digest('hex'), stats }));
} catch (error) {
  process.stderr.write(error.message + '\\n');
  process.exitCode = 1;
}
`;

/** What the reader child printed. */
interface ReadResult {
  readonly records: number;
  readonly sha256: string;
  readonly stats?: ReadonlyArray<{
    readonly index: { readonly origin: string; readonly requests: number };
    readonly dataBytes: number;
  }>;
}

/** An answer to a raw request: status, headers, body. */
interface RawAnswer {
  readonly status: number;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: Buffer;
}

/** One HTTPS request with node:https, trusting `ca`, on a connection of its own. */
function rawRequest(
  url: string,
  ca: string,
  method: string,
  headers: Record<string, string> = {},
): Promise<RawAnswer> {
  return new Promise((resolve, reject) => {
    const sent = request(url, { method, headers, ca, agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on('data', (chunk: Buffer) => chunks.push(chunk));
      answer.on('end', () =>
        resolve({ status: answer.statusCode ?? 0, headers: answer.headers, body: Buffer.concat(chunks) }),
      );
      answer.on('error', reject);
    });
    sent.on('error', reject);
    sent.end();
  });
}

const missing = nginxMissing();
const inCi = process.env.CI === 'true';
if (missing !== undefined && !inCi) console.warn(`nginx tests skipped: ${missing}`);

describe.skipIf(missing !== undefined && !inCi)(
  'HttpByteSource and the file readers against nginx over HTTPS',
  () => {
    let nginx: NginxProcess;
    let scratch: string;
    let local: string;
    const localReads = new Map<string, ReadResult>();
    const trusted = (): NodeJS.ProcessEnv => ({ ...childBaseEnv(), NODE_EXTRA_CA_CERTS: nginx.caFile });

    async function read(origin: string, env: NodeJS.ProcessEnv, replace?: string): Promise<ChildOutcome> {
      const cache = await mkdtemp(join(scratch, 'cache-'));
      return runModuleInChild(READER, [origin, cache, ...(replace === undefined ? [] : [replace])], env);
    }

    async function readOk(origin: string, env: NodeJS.ProcessEnv): Promise<ReadResult> {
      const outcome = await read(origin, env);
      expect(outcome.stderr).toBe('');
      expect(outcome.code).toBe(0);
      return JSON.parse(outcome.stdout) as ReadResult;
    }

    /** nginx's log of the requests for `uri` made since `before` requests were logged. */
    async function requestsFor(uri: string, before: number): Promise<NginxLoggedRequest[]> {
      return (await nginx.requests()).slice(before).filter((request) => request.uri === uri);
    }

    beforeAll(async () => {
      // In CI a missing nginx fails here, naming what to install.
      nginx = await startNginx();
      console.info(`${nginx.version} serving ${nginx.origin}`);
      scratch = await mkdtemp(join(tmpdir(), 'edl-nginx-https-'));
      local = join(scratch, 'local');
      await mkdir(local);
      const written = await runModuleInChild(WRITER, [local, nginx.root], childBaseEnv());
      expect(written).toEqual({ code: 0, stdout: '', stderr: '' });
      for (const [, name] of FORMATS) localReads.set(name, await readOk(join(local, name), childBaseEnv()));
    }, 60_000);

    afterAll(async () => {
      await nginx?.stop();
      if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
    });

    it('serves Range, ETag and If-Match itself (raw requests): what the reader relies on', async () => {
      const ca = await readFile(nginx.caFile, 'utf8');
      const file = join(nginx.root, 'raw.bin');
      const bytes = Buffer.from(Array.from({ length: 100_000 }, (_, i) => (i * 13) & 0xff));
      await writeFile(file, bytes);
      const url = `${nginx.origin}/raw.bin`;
      const head = await rawRequest(url, ca, 'HEAD');
      expect(head.status).toBe(200);
      expect(head.headers['accept-ranges']).toBe('bytes');
      expect(head.headers['content-length']).toBe('100000');
      // A strong ETag made of the file's mtime (seconds) and size, both in hex.
      const { mtime } = await stat(file);
      const etag = `"${Math.floor(mtime.getTime() / 1000).toString(16)}-${(100_000).toString(16)}"`;
      expect(head.headers.etag).toBe(etag);
      expect(head.headers['last-modified']).toBe(mtime.toUTCString().replace('UTC', 'GMT'));

      const ranged = await rawRequest(url, ca, 'GET', { range: 'bytes=10-19', 'if-match': etag });
      expect([ranged.status, ranged.headers['content-range'], ranged.headers.etag]).toEqual([
        206,
        'bytes 10-19/100000',
        etag,
      ]);
      expect(ranged.body.equals(bytes.subarray(10, 20))).toBe(true);
      for (const stale of ['"5f5e100-186a0"', `W/${etag}`]) {
        // Another ETag, or the same one weak (If-Match compares strongly): 412, no bytes of the file.
        const refused = await rawRequest(url, ca, 'GET', { range: 'bytes=10-19', 'if-match': stale });
        expect(refused.status).toBe(412);
        expect(refused.body.includes(bytes.subarray(10, 20))).toBe(false);
      }
      const unmodified = await rawRequest(url, ca, 'GET', {
        range: 'bytes=0-0',
        'if-unmodified-since': new Date(mtime.getTime() - 3_600_000).toUTCString(),
      });
      expect(unmodified.status).toBe(412);
      const tail = await rawRequest(url, ca, 'GET', { range: 'bytes=99990-' });
      expect([tail.status, tail.headers['content-range'], tail.body.length]).toEqual([
        206,
        'bytes 99990-99999/100000',
        10,
      ]);

      // Written over at the same size within the same second of mtime: the ETag is the same, so
      // If-Match lets the new bytes through. nginx cannot tell such a rewrite; a new mtime second can.
      const rewritten = Buffer.from(bytes).fill(0, 10, 20);
      await writeFile(file, rewritten);
      await utimes(file, mtime, mtime);
      const same = await rawRequest(url, ca, 'GET', { range: 'bytes=10-19', 'if-match': etag });
      expect([same.status, same.headers.etag, same.body.equals(rewritten.subarray(10, 20))]).toEqual([
        206,
        etag,
        true,
      ]);
      const later = new Date(mtime.getTime() + 2000);
      await utimes(file, later, later);
      expect((await rawRequest(url, ca, 'GET', { range: 'bytes=10-19', 'if-match': etag })).status).toBe(412);
    });

    describe.each(FORMATS)('%s', (_format, name) => {
      it('without a sidecar: a header walk, then records identical to the local read, in 206 answers pinned by If-Match', async () => {
        const before = (await nginx.requests()).length;
        const remote = await readOk(`${nginx.origin}/plain/${name}`, trusted());
        expect(remote.records).toBe(localReads.get(name)?.records);
        expect(remote.records).toBeGreaterThan(2000);
        expect(remote.sha256).toBe(localReads.get(name)?.sha256);
        const [file] = remote.stats ?? [];
        expect(file?.index.origin).toBe('header-walk');
        // The data GETs ask for each byte of the file once; the header walk's GETs come before them.
        expect(file?.dataBytes).toBe((await stat(join(nginx.root, 'plain', name))).size);
        const seen = await requestsFor(`/plain/${name}`, before);
        const head = seen.find((request) => request.method === 'HEAD');
        expect(head?.status).toBe(200);
        const gets = seen.filter((request) => request.method === 'GET');
        expect(gets.length).toBeGreaterThan(1);
        for (const get of gets) {
          expect(get.status).toBe(206);
          expect(get.range).toMatch(/^bytes=\d+-\d+$/);
          // Pinned to the version the HEAD saw: nginx's ETag, `"<mtime hex>-<size hex>"`.
          expect(get.ifMatch).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
        }
        // The sidecar was looked for and is not there.
        expect((await requestsFor(`/plain/${name}.idx`, before)).map((request) => request.status)).toEqual([
          404,
        ]);
      });

      it('with a sidecar: one GET for the index, and the data fetched once (fetched / used = 1)', async () => {
        const before = (await nginx.requests()).length;
        const remote = await readOk(`${nginx.origin}/idx/${name}`, trusted());
        expect(remote.sha256).toBe(localReads.get(name)?.sha256);
        const [file] = remote.stats ?? [];
        expect(file?.index.origin).toBe('sidecar');
        const sidecar = await requestsFor(`/idx/${name}.idx`, before);
        // The sidecar is read whole by one ranged GET.
        expect(
          sidecar
            .filter((request) => request.method === 'GET')
            .map((request) => [request.status, request.range]),
        ).toEqual([[206, expect.stringMatching(/^bytes=0-\d+$/)]]);
        const gets = (await requestsFor(`/idx/${name}`, before)).filter(
          (request) => request.method === 'GET',
        );
        // Several ranged GETs (64 KiB parts), each a 206 of exactly the bytes its Range asked for.
        expect(gets.length).toBeGreaterThan(2);
        let fetched = 0;
        for (const get of gets) {
          expect(get.status).toBe(206);
          const [, first, last] = /^bytes=(\d+)-(\d+)$/.exec(get.range) ?? [];
          expect(get.bodyBytes).toBe(Number(last) - Number(first) + 1);
          fetched += get.bodyBytes;
        }
        const size = (await requestsFor(`/idx/${name}`, before)).find((request) => request.method === 'HEAD');
        expect(size?.status).toBe(200);
        // Every byte of the file is used once by a read of the whole file: what nginx sent is what the reader counted, the file's size.
        expect(fetched).toBe(file?.dataBytes);
        const fileSize = (await stat(join(nginx.root, 'idx', name))).size;
        expect(fetched / fileSize).toBe(1);
      });
    });

    it('an object written over while a reader has it open fails with CHANGED naming the URL: nginx answers If-Match with 412', async () => {
      const url = `${nginx.origin}/replaced/data.rio`;
      const before = (await nginx.requests()).length;
      const line = failureLine(await read(url, trusted(), join(nginx.root, 'replaced', 'data.rio')), url);
      expect(line).toMatch(/^CHANGED: /);
      // nginx's refusal, not only the reader's own comparison of the answer's ETag.
      expect(line).toMatch(/\b412\b/);
      const refused = (await requestsFor('/replaced/data.rio', before)).filter(
        (request) => request.status === 412,
      );
      expect(refused.length).toBeGreaterThan(0);
      // The reader sent the ETag it pinned, and nginx compared it with the new file's.
      for (const request of refused) expect(request.ifMatch).toMatch(/^"[0-9a-f]+-[0-9a-f]+"$/);
    });

    it('without the test CA the read fails with one line naming the URL', async () => {
      const url = `${nginx.origin}/idx/data.tfrecord`;
      expect(failureLine(await read(url, childBaseEnv()), url)).toMatch(/certificate/i);
    });
  },
);
