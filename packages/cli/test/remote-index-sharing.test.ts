/**
 * Workers do not repeat the master's header walk (issue 24 item 3). The master's reader indexes
 * remote objects that have no sidecar by walking their chunk headers (a 20-byte ranged GET per
 * chunk) and stores each index in the index cache, keyed by URL and ETag. Worker processes
 * re-create the reader from its description, which names the same cache, so they find the indexes
 * there and spend no request on them. Counted by a fault proxy (no fault injected) between the
 * readers and a real s3rver, with real worker processes reading every record through the reader.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDataReader, type DataReader } from '@edl/data';
import { silentLogger, startMaster } from '@edl/master';
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

/** Runs a one-epoch training job over `reader` with `workers` sim workers reading through `workerReader`. */
async function train(reader: DataReader<unknown>, workerReader: DataReader<unknown>, workers: number) {
  const handle = await startMaster({
    jobType: 'training',
    trainingReader: reader,
    minibatchSize: 10,
    numMinibatchesPerTask: 5,
    numEpochs: 1,
    parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
    logger: silentLogger,
    workers: {
      args: [simWorker],
      numWorkers: workers,
      env: {
        ...process.env,
        AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
        AWS_ENDPOINT_URL_S3: proxy.endpoint,
        SIM_RECORDS: String(RECORDS),
        SIM_MINIBATCH: '10',
        SIM_TRANSPORT: 'stream',
        SIM_READER: JSON.stringify(workerReader.describe()),
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
    const file = join(scratch, name);
    // Small chunks: a walk of many headers per object.
    const writer = RecordIOWriter.createSync(file, { maxChunkBytes: 256 });
    for (let id = from; id < to; id++) writer.write(String(id));
    writer.close();
    const local = await RecordIOReader.open(file);
    chunks.set(`/bucket/ids/${name}`, local.chunks.length);
    local.close();
    await s3.put('bucket', `ids/${name}`, readFileSync(file));
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
    proxy.requests.length = 0;
    const reader = await createDataReader('s3://bucket/ids/', {
      remote: { indexCacheDir: join(scratch, 'master-cache') },
    });
    await reader.createShards();
    const walked = headerReads(proxy.requests.splice(0));
    expect(walked).toEqual(chunks);
    const elsewhere = await createDataReader('s3://bucket/ids/', {
      remote: { indexCacheDir: join(scratch, 'worker-cache') },
    });
    await train(reader, elsewhere, 1);
    expect(headerReads(proxy.requests)).toEqual(walked);
    await reader.close?.();
    await elsewhere.close?.();
  }, 120_000);
});
