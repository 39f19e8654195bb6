/**
 * Workers do not repeat the master's header walk (issue 24 item 3). The master's reader indexes
 * remote objects that have no sidecar by walking their chunk headers (a 20-byte ranged GET per
 * chunk) and stores each index in the index cache, keyed by URL and ETag. Worker processes
 * re-create the reader from its description: on one host they find the indexes in the same cache;
 * as pods with a cache of their own, they ask the master (GetFileIndex) for the index of the
 * version they see. Counted by a fault proxy (no fault injected) between the readers and a real
 * s3rver, with real worker processes reading every record through the reader (simulated workers
 * that train by reporting which records they read, and one real `edl worker` training census).
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDataReader, type DataReader, type RemoteFileStats, type Shard } from '@edl/data';
import { silentLogger, startMaster } from '@edl/master';
import { generateCensusCsv } from '@edl/model-zoo';
import { RecordIOReader, RecordIOWriter } from '@edl/recordio';
import { configureS3 } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simWorker } from '../../master/test/helpers.js';
import { FaultProxy, type SeenRequest } from '../../storage/test/support/fault-proxy.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';

const RECORDS = 400;
/** `edl worker`'s census options: the CSV's header row, a minibatch of 50. */
const CENSUS_ARGS = ['--data-reader-params', '{"header":true}', '--minibatch-size', '50'];
const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
/** Bytes of a RecordIO chunk header: what a header walk asks for, one chunk at a time. */
const CHUNK_HEADER_BYTES = 20;
const scratch = mkdtempSync(join(tmpdir(), 'edl-index-sharing-'));
let s3: S3rverProcess;
let proxy: FaultProxy;
/** Chunks per object key, from the local files. */
const chunks = new Map<string, number>();

/** Ranged GETs of one chunk header each, per object key. */
function headerReads(requests: readonly SeenRequest[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const request of requests) {
    const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
    if (request.method !== 'GET' || range === null) continue;
    if (Number(range[2]) - Number(range[1]) + 1 !== CHUNK_HEADER_BYTES) continue;
    const key = request.path.split('?')[0] as string;
    counts.set(key, (counts.get(key) ?? 0) + 1);
  }
  return counts;
}

/** A worker process's environment: this one's, with s3rver's credentials, through the proxy. */
function workerS3Env(): NodeJS.ProcessEnv {
  return {
    ...process.env,
    AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    AWS_ENDPOINT_URL_S3: proxy.endpoint,
  };
}

/** Writes `to - from` record ids as a RecordIO object `ids/<name>` in chunks of `chunkBytes`; its chunk count. */
async function putIds(name: string, from: number, to: number, chunkBytes: number): Promise<number> {
  const file = join(scratch, name);
  const writer = RecordIOWriter.createSync(file, { maxChunkBytes: chunkBytes });
  for (let id = from; id < to; id++) writer.write(String(id));
  writer.close();
  const local = await RecordIOReader.open(file);
  const count = local.chunks.length;
  local.close();
  await s3.put('bucket', `ids/${name}`, readFileSync(file));
  return count;
}

/**
 * What pod-like worker processes are given: each an index cache of its own under `cacheRoot` (the
 * reader they re-create names none), and the master as their index provider.
 */
function podEnv(name: string): { cacheRoot: string; statsDir: string; env: Record<string, string> } {
  const cacheRoot = join(scratch, `${name}-caches`);
  const statsDir = join(scratch, `${name}-stats`);
  mkdirSync(statsDir, { recursive: true });
  return {
    cacheRoot,
    statsDir,
    env: { SIM_INDEX_FROM_MASTER: '1', SIM_CACHE_ROOT: cacheRoot, SIM_STATS_DIR: statsDir },
  };
}

/** The remote file stats every worker wrote to `statsDir`, by object key. */
function workerFileStats(statsDir: string): Map<string, RemoteFileStats[]> {
  const byKey = new Map<string, RemoteFileStats[]>();
  for (const name of readdirSync(statsDir)) {
    const files = JSON.parse(readFileSync(join(statsDir, name), 'utf8')) as RemoteFileStats[];
    for (const file of files) {
      const key = `/bucket/${file.location.replace('s3://bucket/', '')}`;
      byKey.set(key, [...(byKey.get(key) ?? []), file]);
    }
  }
  return byKey;
}

/**
 * The master's reader of the prefix with its index cache at `cacheName`, and its shards: cutting
 * them walked every chunk header of both objects, once (the requests seen so far are dropped).
 */
async function masterReader(cacheName: string): Promise<{ reader: DataReader<unknown>; shards: Shard[] }> {
  proxy.requests.length = 0;
  const reader = await createDataReader('s3://bucket/ids/', {
    remote: { indexCacheDir: join(scratch, cacheName) },
  });
  const shards = await reader.createShards();
  expect(headerReads(proxy.requests.splice(0))).toEqual(chunks);
  return { reader, shards };
}

/**
 * Runs a one-epoch training job over `reader` (its shards, or `shards` when given) with `workers`
 * sim workers reading through `workerReader`, with `env` added to theirs.
 */
async function train(
  reader: DataReader<unknown>,
  workerReader: DataReader<unknown>,
  workers: number,
  options: { readonly shards?: readonly Shard[]; readonly env?: Record<string, string> } = {},
) {
  const handle = await startMaster({
    jobType: 'training',
    trainingReader: reader,
    ...(options.shards === undefined ? {} : { trainingShards: options.shards }),
    minibatchSize: 10,
    numMinibatchesPerTask: 5,
    numEpochs: 1,
    parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
    logger: silentLogger,
    workers: {
      args: [simWorker],
      numWorkers: workers,
      env: {
        ...workerS3Env(),
        SIM_RECORDS: String(RECORDS),
        SIM_MINIBATCH: '10',
        SIM_TRANSPORT: 'stream',
        SIM_READER: JSON.stringify(workerReader.describe()),
        ...options.env,
      },
    },
  });
  const result = await handle.wait();
  expect(result.error?.message).toBeUndefined();
  expect(result.state).toBe('succeeded');
  // Every record was trained once: the workers really read the objects.
  expect(Array.from(new Set(handle.master.store.getModel().variables[0]?.values))).toEqual([1]);
}

beforeAll(async () => {
  s3 = await startS3rver();
  proxy = await FaultProxy.start(Number(new URL(s3.endpoint).port));
  await s3.createBucket('bucket');
  for (const [name, from, to] of [
    ['ids-0.rio', 0, 220],
    ['ids-1.rio', 220, RECORDS],
  ] as const) {
    // Small chunks: a walk of many headers per object.
    chunks.set(`/bucket/ids/${name}`, await putIds(name, from, to, 256));
  }
  configureS3({ endpoint: proxy.endpoint, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
}, 60_000);

afterAll(async () => {
  configureS3({});
  await proxy?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('remote indexes built by the master', () => {
  it('are found by worker processes in the shared index cache: no worker walks a header', async () => {
    const indexCacheDir = join(scratch, 'cache');
    const reader = await createDataReader('s3://bucket/ids/', { remote: { indexCacheDir } });
    await reader.createShards();
    const walked = headerReads(proxy.requests);
    // The master walked every chunk header of both objects, once.
    expect(walked).toEqual(chunks);
    expect([...chunks.values()].every((count) => count > 1)).toBe(true);

    proxy.requests.length = 0;
    await train(reader, reader, 2);
    const byWorkers = proxy.requests;
    // Two workers each listed the prefix and fetched data, and walked no header.
    expect(byWorkers.filter((r) => r.method === 'GET' && r.path.includes('list-type=2'))).toHaveLength(2);
    expect(
      byWorkers.filter((r) => r.method === 'GET' && r.headers.range !== undefined).length,
    ).toBeGreaterThan(0);
    expect(headerReads(byWorkers)).toEqual(new Map());
    await reader.close?.();
  }, 120_000);

  it("are walked again by a worker whose cache is not the master's (what the shared cache saves)", async () => {
    const { reader } = await masterReader('master-cache');
    const elsewhere = await createDataReader('s3://bucket/ids/', {
      remote: { indexCacheDir: join(scratch, 'worker-cache') },
    });
    await train(reader, elsewhere, 1);
    expect(headerReads(proxy.requests)).toEqual(chunks);
    await reader.close?.();
    await elsewhere.close?.();
  }, 120_000);

  it('come from the master to worker pods with caches of their own: no worker walks a header', async () => {
    const { reader } = await masterReader('pod-master-cache');
    const pod = podEnv('pod-worker');
    const workerReader = await createDataReader('s3://bucket/ids/');
    await train(reader, workerReader, 2, { env: pod.env });
    // The workers fetched data and walked no header: each index came in the master's reply.
    expect(proxy.requests.some((r) => r.method === 'GET' && r.headers.range !== undefined)).toBe(true);
    expect(headerReads(proxy.requests)).toEqual(new Map());
    const stats = workerFileStats(pod.statsDir);
    expect([...stats.keys()].sort()).toEqual([...chunks.keys()].sort());
    for (const file of [...stats.values()].flat()) {
      // The worker's stats say where its index came from, and that it cost no storage request.
      expect(file.index).toEqual({ origin: 'master', requests: 0 });
      expect(file.dataRequests).toBeGreaterThan(0);
    }
    // Each worker kept what it was sent in its own cache, as a walk's result would be kept.
    // (one directory per worker that read: a fast one may have taken every task).
    const kept = readdirSync(pod.cacheRoot).flatMap((worker) => readdirSync(join(pod.cacheRoot, worker)));
    expect(kept.filter((name) => name.endsWith('.idx'))).toHaveLength([...stats.values()].flat().length);
    await reader.close?.();
    await workerReader.close?.();
  }, 120_000);

  it('come from the master for a CSV object too: the worker streams no line index', async () => {
    const lines = Array.from({ length: RECORDS }, (_, id) => `${id},record ${id}\n`).join('');
    await s3.put('bucket', 'csv/ids.csv', Buffer.from(lines));
    proxy.requests.length = 0;
    const reader = await createDataReader('s3://bucket/csv/ids.csv', {
      remote: { indexCacheDir: join(scratch, 'csv-master-cache') },
    });
    await reader.createShards();
    expect(
      proxy.requests.filter((r) => r.method === 'GET' && r.headers.range !== undefined).length,
    ).toBeGreaterThan(0);
    proxy.requests.length = 0;
    const pod = podEnv('csv-worker');
    const workerReader = await createDataReader('s3://bucket/csv/ids.csv');
    await train(reader, workerReader, 1, { env: pod.env });
    expect(
      workerFileStats(pod.statsDir)
        .get('/bucket/csv/ids.csv')
        ?.map((file) => file.index),
    ).toEqual([{ origin: 'master', requests: 0 }]);
    await reader.close?.();
    await workerReader.close?.();
  }, 120_000);

  it('are never served for another version of an object: a replaced object is walked by the worker', async () => {
    const { reader, shards } = await masterReader('stale-master-cache');
    // The master indexed the objects as they were; then ids-1.rio is replaced by the same records
    // in other chunks (a new ETag). The old index read against it would find no chunk header.
    const rechunked = await putIds('ids-1.rio', 220, RECORDS, 512);
    expect(rechunked).not.toBe(chunks.get('/bucket/ids/ids-1.rio'));
    proxy.requests.length = 0;
    const pod = podEnv('stale-worker');
    const workerReader = await createDataReader('s3://bucket/ids/');
    // The same records: the master's shards of the old version still count them right.
    await train(reader, workerReader, 1, { shards, env: pod.env });
    // The worker walked the new version's headers itself, and only those: the unchanged object's
    // index came from the master.
    expect(headerReads(proxy.requests)).toEqual(new Map([['/bucket/ids/ids-1.rio', rechunked]]));
    const stats = workerFileStats(pod.statsDir);
    expect(stats.get('/bucket/ids/ids-0.rio')?.map((file) => file.index.origin)).toEqual(['master']);
    expect(stats.get('/bucket/ids/ids-1.rio')?.map((file) => file.index)).toEqual([
      { origin: 'header-walk', requests: rechunked },
    ]);
    await reader.close?.();
    await workerReader.close?.();
  }, 120_000);

  it('come from the master to a real `edl worker` with a cache of its own (the CLI sets the provider)', async () => {
    const csv = await generateCensusCsv({ file: join(scratch, 'census.csv'), rows: 300, seed: 1 });
    const size = readFileSync(csv).byteLength;
    await s3.put('bucket', 'census/train.csv', readFileSync(csv));
    const origin = 's3://bucket/census/train.csv';
    const reader = await createDataReader(origin, {
      header: true,
      remote: { indexCacheDir: join(scratch, 'census-master-cache') },
    });
    await reader.createShards();
    proxy.requests.length = 0;
    const workerCache = join(scratch, 'census-worker-cache');
    const output: string[] = [];
    const handle = await startMaster({
      jobType: 'training',
      trainingReader: reader,
      minibatchSize: 50,
      numMinibatchesPerTask: 2,
      numEpochs: 1,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 0.01 } },
      logger: silentLogger,
      workers: {
        command: process.execPath,
        args: [
          edl,
          'worker',
          '--model-def',
          'census',
          '--training-data',
          origin,
          '--backend',
          'cpu',
          ...CENSUS_ARGS,
        ],
        numWorkers: 1,
        onOutput: (_worker, line) => output.push(line),
        env: { ...workerS3Env(), EDL_INDEX_CACHE_DIR: workerCache },
      },
    });
    const result = await handle.wait();
    expect(result.error?.message, output.join('\n')).toBeUndefined();
    expect(result.state).toBe('succeeded');
    // The worker kept the master's line index and did not stream the object to build one. At open
    // the text reader reads the object's head twice (a sample of rows for the column types, then
    // the header row): one GET each of this small object whole. Building the line index would
    // stream it once more (a third such GET: seen with the provider left unset).
    expect(readdirSync(workerCache).filter((name) => name.endsWith('.idx'))).toHaveLength(1);
    const whole = proxy.requests.filter(
      (r) => r.method === 'GET' && r.headers.range === `bytes=0-${size - 1}`,
    );
    expect(whole).toHaveLength(2);
    expect(
      proxy.requests.some((r) => r.method === 'GET' && r.headers.range?.startsWith('bytes=0-') !== true),
    ).toBe(true);
    expect(output.join('\n')).not.toContain('index.from_master');
    await reader.close?.();
  }, 240_000);
});
