import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EmbeddingTable, readShardMarkers, shardCheckpointDirName } from '../src/index.js';
import { JOB, startShards, stopAll, TABLE } from './checkpoint-shards.js';

// SaveShard / RestoreShard on real shards over gRPC: a checkpoint written by 2 shards is read back
// by 2 and by 3 (re-sharded by id hash), and equals a single reference table fed the same pushes.
describe('shard checkpoints', () => {
  let dir = '';
  afterEach(stopAll);
  afterAll(async () => {
    if (dir !== '') await rm(dir, { recursive: true, force: true });
  });

  it('restores the saved cut on the same and on another number of shards', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edl-shard-ckpt-'));
    const reference = new EmbeddingTable({ ...TABLE, seed: JOB.seed, optimizer: JOB.optimizer });
    const ids = Float64Array.from({ length: 40 }, (_, i) => i * 7 + 1);
    const gradients = Float32Array.from({ length: ids.length * TABLE.dim }, (_, i) => Math.sin(i));
    const written = await startShards(2);
    await written.client.pull(TABLE.name, ids);
    await written.client.push(TABLE.name, ids, gradients, { modelVersion: 3, workerId: 'worker-0' });
    reference.pull(ids);
    reference.push(ids, gradients);
    const markers = await written.client.saveShards(3, dir);
    expect(markers).toEqual([0, 1].map((i) => join(dir, shardCheckpointDirName(3), `shard-${i}-of-2.json`)));
    expect(readShardMarkers(dir, 3).map((m) => m.tables[0]?.rows)).toEqual(
      (await written.client.describe()).map((d) => d.tables[0]?.rows),
    );

    // Pushes after the cut are undone by a restore on the same shards.
    await written.client.push(TABLE.name, ids, gradients, { modelVersion: 4, workerId: 'worker-0' });
    expect(await written.client.pull(TABLE.name, ids, { create: false })).not.toEqual(reference.lookup(ids));
    expect(await written.client.restoreShards(3, dir)).toEqual(
      (await written.client.describe()).map((d) => d.tables[0]?.rows),
    );
    expect(await written.client.pull(TABLE.name, ids, { create: false })).toEqual(reference.lookup(ids));

    // Three shards read the two shards' files, each keeping its own ids, optimizer state included.
    const resharded = await startShards(3);
    const rows = await resharded.client.restoreShards(3, dir);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(ids.length);
    expect(rows.every((r) => r > 0)).toBe(true);
    expect(await resharded.client.pull(TABLE.name, ids, { create: false })).toEqual(reference.lookup(ids));
    await resharded.client.push(TABLE.name, ids, gradients, { modelVersion: 4, workerId: 'worker-0' });
    reference.push(ids, gradients);
    expect(await resharded.client.pull(TABLE.name, ids, { create: false })).toEqual(reference.lookup(ids));

    // A reset empties the tables: rows read as the initializer's values again.
    expect(await resharded.client.restoreShards(undefined, dir)).toEqual([0, 0, 0]);
    const fresh = new EmbeddingTable({ ...TABLE, seed: JOB.seed, optimizer: JOB.optimizer });
    expect(await resharded.client.pull(TABLE.name, ids, { create: false })).toEqual(fresh.lookup(ids));
  });

  it('refuses a checkpoint whose shard files are incomplete', async () => {
    dir = await mkdtemp(join(tmpdir(), 'edl-shard-ckpt-'));
    const { client } = await startShards(2);
    await client.pull(TABLE.name, new Float64Array([1, 2, 3, 4]));
    await client.saveShards(7, dir);
    const versionDir = join(dir, shardCheckpointDirName(7));
    await rm(join(versionDir, 'shard-1-of-2.json'));
    expect((await readdir(versionDir)).sort()).toEqual([
      'shard-0-of-2-t0.edlemb',
      'shard-0-of-2.json',
      'shard-1-of-2-t0.edlemb',
    ]);
    expect(() => readShardMarkers(dir, 7)).toThrow(/has shard markers \[0\/2\], not one of each/);
    await expect(client.restoreShards(7, dir)).rejects.toThrow(/not one of each of its shards/);
    await expect(client.restoreShards(8, dir)).rejects.toThrow(/has no parameter-server shard files/);
  });
});
