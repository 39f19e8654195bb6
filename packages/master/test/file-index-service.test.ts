/**
 * GetFileIndex (issue 24 item 3) on a real gRPC server, with real index cache directories and a
 * real sidecar index of a RecordIO file: what the master answers (only the version asked for, only
 * with the job token, nothing over its limit), and what a worker's IndexCache does with the answer.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IndexCache, setRemoteIndexProvider } from '@edl/data';
import { MasterClient } from '@edl/proto';
import { buildLocalSidecarIndex, encodeSidecarIndex, RecordIOWriter, type SidecarIndex } from '@edl/recordio';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FILE_INDEX_MAX_BYTES } from '../src/file-index-service.js';
import { type MasterServer, serveMaster } from '../src/grpc-server.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';

const TOKEN = 'job-token-for-tests';
const LOCATION = 's3://bucket/ids/ids-0.rio';
const scratch = mkdtempSync(join(tmpdir(), 'edl-file-index-'));
const masterCacheDir = join(scratch, 'master-cache');
let sidecar: SidecarIndex;
let encoded: Uint8Array;
let server: MasterServer;
/** A server whose message limit is too small for the index. */
let smallServer: MasterServer;

function newMaster(): Master {
  return new Master({
    jobType: 'training',
    trainingShards: [{ name: LOCATION, start: 0, count: 300 }],
    minibatchSize: 10,
    logger: silentLogger,
    parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
  });
}

beforeAll(async () => {
  const file = join(scratch, 'ids-0.rio');
  const writer = RecordIOWriter.createSync(file, { maxChunkBytes: 256 });
  for (let id = 0; id < 300; id++) writer.write(String(id));
  writer.close();
  sidecar = await buildLocalSidecarIndex(file, 'recordio');
  encoded = encodeSidecarIndex(sidecar);
  // What the master's reader left in its cache when it cut the shards: version etag-1.
  expect(await new IndexCache(masterCacheDir).put(LOCATION, 'etag-1', sidecar)).toBe(true);
  const indexCacheDirs = [join(scratch, 'no-such-cache'), masterCacheDir];
  server = await serveMaster(newMaster(), { token: TOKEN, indexCacheDirs });
  smallServer = await serveMaster(newMaster(), { token: TOKEN, indexCacheDirs, maxMessageBytes: 1100 });
});

afterEach(() => setRemoteIndexProvider(undefined));

afterAll(async () => {
  await server.shutdown(1_000);
  await smallServer.shutdown(1_000);
  rmSync(scratch, { recursive: true, force: true });
});

describe('GetFileIndex', () => {
  it("answers the master's cached index of the version asked for, and of no other", async () => {
    const client = await MasterClient.connect(server.address, TOKEN);
    const answer = await client.fileIndex('recordio', LOCATION, 'etag-1');
    expect(answer !== undefined && 'index' in answer ? Array.from(answer.index) : []).toEqual(
      Array.from(encoded),
    );
    expect(await client.fileIndex('recordio', LOCATION, 'etag-2')).toBeUndefined();
    expect(await client.fileIndex('tfrecord', LOCATION, 'etag-1')).toBeUndefined();
    expect(await client.fileIndex('recordio', `${LOCATION}x`, 'etag-1')).toBeUndefined();
    await expect(client.fileIndex('recordio', LOCATION, '')).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringContaining('for version'),
    });
    client.close();
  });

  it('is refused without the job token', async () => {
    const client = new MasterClient(server.address, 'wrong-token');
    await expect(client.fileIndex('recordio', LOCATION, 'etag-1')).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    client.close();
  });

  it("says an index over its message limit is too large, and the worker's cache builds it itself", async () => {
    expect(encoded.byteLength).toBeGreaterThan(1100 - 1024);
    const client = await MasterClient.connect(smallServer.address, TOKEN);
    expect(await client.fileIndex('recordio', LOCATION, 'etag-1')).toEqual({
      tooLargeBytes: encoded.byteLength,
      limitBytes: 1100 - 1024,
    });
    const warnings: string[] = [];
    setRemoteIndexProvider(client, (message) => warnings.push(message));
    const cache = new IndexCache(join(scratch, 'small-worker-cache'));
    expect(await cache.get('recordio', LOCATION, 'etag-1', sidecar.dataSize)).toBeUndefined();
    expect(warnings).toEqual([
      `the index of ${LOCATION} is ${encoded.byteLength} bytes, over the master's limit of 76 bytes per message: building it here`,
    ]);
    client.close();
    expect(FILE_INDEX_MAX_BYTES).toBe(16 * 1024 * 1024);
  });
});

describe("a worker's IndexCache with the master as its provider", () => {
  it('takes the index of its version from the master, keeps it, and never takes another version', async () => {
    const client = await MasterClient.connect(server.address, TOKEN);
    const warnings: string[] = [];
    setRemoteIndexProvider(client, (message) => warnings.push(message));
    const cache = new IndexCache(join(scratch, 'worker-cache'));
    const first = await cache.get('recordio', LOCATION, 'etag-1', sidecar.dataSize);
    expect(first?.origin).toBe('master');
    expect(first?.index).toEqual(sidecar);
    // Kept in the worker's own cache: the next reader of the process asks no one.
    expect((await cache.get('recordio', LOCATION, 'etag-1', sidecar.dataSize))?.origin).toBe('cache');
    expect(Array.from((await cache.getBytes('recordio', LOCATION, 'etag-1')) ?? [])).toEqual(
      Array.from(encoded),
    );
    // A replaced object (another ETag) finds no index, here or at the master.
    expect(await cache.get('recordio', LOCATION, 'etag-2', sidecar.dataSize)).toBeUndefined();
    // An answer that does not index an object of this size is neither used nor kept.
    const elsewhere = new IndexCache(join(scratch, 'other-worker-cache'));
    expect(await elsewhere.get('recordio', LOCATION, 'etag-1', sidecar.dataSize + 1)).toBeUndefined();
    expect(await elsewhere.getBytes('recordio', LOCATION, 'etag-1')).toBeUndefined();
    expect(warnings).toEqual([]);
    client.close();
  });

  it('builds the index itself, with a warning, when the master cannot be reached', async () => {
    const address = server.address.replace(/:\d+$/, ':1');
    const client = new MasterClient(address, TOKEN, { deadlineMs: 2_000 });
    const warnings: string[] = [];
    setRemoteIndexProvider(client, (message) => warnings.push(message));
    const cache = new IndexCache(join(scratch, 'lost-worker-cache'));
    expect(await cache.get('recordio', LOCATION, 'etag-1', sidecar.dataSize)).toBeUndefined();
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(
      new RegExp(
        `^the index of ${LOCATION} could not be had from the ElasticDL master \\(.*UNAVAILABLE.*\\): building it here$`,
      ),
    );
    client.close();
  });
});
