import { byteSourceFor, configureS3, deleteObject, putObject } from '@edl/storage';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { EmbeddingTable, readObjectStoreShardMarkers, shardPartsPrefix } from '../src/index.js';
import { JOB, startShards, stopAll, TABLE } from './checkpoint-shards.js';

// SaveShard / RestoreShard with an s3:// checkpoint dir, on real shards over gRPC and a real s3rver
// process: the parts land as table objects plus markers, re-shard on restore, and replace what an
// earlier write or another shard count left under the version's prefix.
const DIR = 's3://bucket/ckpt/';

let s3: S3rverProcess;

/** The names of the objects directly under `prefix`, sorted. */
async function namesUnder(prefix: string): Promise<string[]> {
  const listed = await (await byteSourceFor(prefix)).list(prefix);
  return listed.map((stat) => stat.location.slice(prefix.length)).sort();
}

beforeAll(async () => {
  s3 = await startS3rver();
  await s3.createBucket('bucket');
  configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
}, 60_000);
afterEach(stopAll);
afterAll(async () => {
  configureS3({});
  await s3?.stop();
});

describe('shard checkpoints in an object store', () => {
  it('writes table objects and markers, restores them on 3 shards, and replaces earlier parts', async () => {
    const reference = new EmbeddingTable({ ...TABLE, seed: JOB.seed, optimizer: JOB.optimizer });
    const ids = Float64Array.from({ length: 40 }, (_, i) => i * 7 + 1);
    const gradients = Float32Array.from({ length: ids.length * TABLE.dim }, (_, i) => Math.sin(i));
    const written = await startShards(2);
    await written.client.pull(TABLE.name, ids);
    await written.client.push(TABLE.name, ids, gradients, { modelVersion: 3, workerId: 'worker-0' });
    reference.pull(ids);
    reference.push(ids, gradients);
    const prefix = shardPartsPrefix(DIR, 3);
    expect(prefix).toBe('s3://bucket/ckpt/ps-000000000003/');
    // What a job with 5 shards, killed before it committed version 3, left there.
    await putObject(`${prefix}shard-4-of-5.json`, new TextEncoder().encode('{}'));
    await putObject(`${prefix}shard-4-of-5-t0.edlemb`, new Uint8Array(8));

    expect(await written.client.saveShards(3, DIR)).toEqual([
      `${prefix}shard-0-of-2.json`,
      `${prefix}shard-1-of-2.json`,
    ]);
    const first = await namesUnder(prefix);
    expect(first.filter((n) => n.endsWith('.json'))).toEqual(['shard-0-of-2.json', 'shard-1-of-2.json']);
    expect(first.filter((n) => /^shard-[01]-of-2-t0-[0-9a-f]{16}\.edlemb$/.test(n))).toHaveLength(2);
    expect(first).toHaveLength(4);
    const markers = await readObjectStoreShardMarkers(DIR, 3);
    expect(markers.map((m) => m.tables[0]?.rows)).toEqual(
      (await written.client.describe()).map((d) => d.tables[0]?.rows),
    );

    // Written again, the version holds the new objects only: the markers name no others.
    await written.client.saveShards(3, DIR);
    const second = await namesUnder(prefix);
    expect(second).toHaveLength(4);
    expect(second.filter((n) => n.endsWith('.edlemb') && first.includes(n))).toEqual([]);

    // Pushes after the cut are undone by a restore; three shards re-shard the two shards' parts.
    await written.client.push(TABLE.name, ids, gradients, { modelVersion: 4, workerId: 'worker-0' });
    expect(await written.client.restoreShards(3, DIR)).toEqual(
      (await written.client.describe()).map((d) => d.tables[0]?.rows),
    );
    expect(await written.client.pull(TABLE.name, ids, { create: false })).toEqual(reference.lookup(ids));
    const resharded = await startShards(3);
    const rows = await resharded.client.restoreShards(3, DIR);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(ids.length);
    expect(rows.every((r) => r > 0)).toBe(true);
    expect(await resharded.client.pull(TABLE.name, ids, { create: false })).toEqual(reference.lookup(ids));
  });

  it('refuses parts whose markers are incomplete, or missing, naming the prefix', async () => {
    const { client } = await startShards(2);
    await client.pull(TABLE.name, new Float64Array([1, 2, 3, 4]));
    await client.saveShards(7, DIR);
    await deleteObject(`${shardPartsPrefix(DIR, 7)}shard-1-of-2.json`);
    await expect(client.restoreShards(7, DIR)).rejects.toThrow(
      /Checkpoint 7 in s3:\/\/bucket\/ckpt\/ps-000000000007\/ has shard markers \[0\/2\], not one of each/,
    );
    await expect(client.restoreShards(8, DIR)).rejects.toThrow(
      /Checkpoint 8 has no parameter-server shard objects under s3:\/\/bucket\/ckpt\/ps-000000000008\//,
    );
  });
});
