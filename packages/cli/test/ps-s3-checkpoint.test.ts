/**
 * `edl train --num-ps 2 --checkpoint-dir s3://...` against a real s3rver process (issues 24 and 25):
 * the shards write their checkpoint parts to the bucket beside the master's manifest, a SIGKILLed
 * shard rolls the job back from the checkpoint in S3, a job SIGKILLed whole resumes from S3 with
 * another number of shards, and a shard part that no master manifest commits is never taken.
 * Needs `pnpm build`.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { listCheckpoints, readCheckpoint } from '@edl/master';
import { readObjectStoreShardMarkers, shardPartsPrefix } from '@edl/ps';
import { byteSourceFor, putObject } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectShardsRestored,
  itemRowsOf,
  jobKiller,
  restoredShards,
  rolledBack,
  succeededOnce,
  TRAIN_RECORDS,
  trainClicks,
  VOCABULARY,
  writeClicks,
} from './helpers/ps-job.js';
import { EDL_BIN } from './helpers/run-edl.js';
import { type BucketS3rver, startBucketS3rver } from './helpers/s3rver-env.js';

let dir: string;
let s3: BucketS3rver | undefined;
/** The environment of the `edl` processes: the s3rver account, as the AWS SDK reads it. */
let s3Env: NodeJS.ProcessEnv;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-ps-s3-'));
  await writeClicks(path.join(dir, 'train.tfrecord'), TRAIN_RECORDS, 1);
  await writeClicks(path.join(dir, 'valid.tfrecord'), 400, 2);
  // This process reads and plants objects through @edl/storage, as the job does.
  s3 = await startBucketS3rver();
  s3Env = s3.env;
}, 60_000);
afterAll(async () => {
  await s3?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The names of the objects directly under `prefix`. */
async function namesUnder(prefix: string): Promise<string[]> {
  const listed = await (await byteSourceFor(prefix)).list(prefix);
  return listed.map((stat) => stat.location.slice(prefix.length));
}

/** The whole object at `location`. */
async function readObject(location: string): Promise<Uint8Array> {
  const source = await byteSourceFor(location);
  const stat = await source.stat(location);
  return source.readRange(stat, 0, stat.size);
}

describe('edl train --num-ps 2 --checkpoint-dir s3://', () => {
  it('commits shard parts with the manifest, rolls back from S3 when a shard is SIGKILLed, and shards restore them re-sharded', async () => {
    const checkpointDir = 's3://bucket/rollback/';
    let killed: number | undefined;
    let committed = false;
    const listening: Record<string, unknown>[] = [];
    const written = new Set<number>();
    const run = await trainClicks({
      dataDir: dir,
      checkpointDir,
      extra: ['--num-ps', '2', '--checkpoint-steps', '20'],
      env: s3Env,
      onEvent: (event) => {
        if (event.event === 'listening') listening.push(event);
        if (typeof event.msg === 'string' && event.msg.startsWith('checkpoint written')) {
          committed = true;
          written.add(event.modelVersion as number);
        }
        const shard1 = listening.find((e) => e.shardIndex === 1);
        if (killed === undefined && committed && typeof shard1?.pid === 'number') {
          killed = shard1.pid;
          process.kill(shard1.pid, 'SIGKILL');
        }
      },
    });
    expect(killed).toBeDefined();
    const summary = succeededOnce(run);
    expect(run.stderr).toMatch(
      /warning: Parameter-server shard 1 \(127\.0\.0\.1:\d+\) exited with signal SIGKILL: relaunched on the same address\. Its embedding rows restart from the checkpoint of model version \d+ in s3:\/\/bucket\/rollback\//,
    );
    const rollback = rolledBack(
      run,
      summary,
      1,
      'checkpoint',
      /^s3:\/\/bucket\/rollback\/checkpoint-\d{12}\.manifest\.json$/,
    );
    expect(rollback.rows).toMatch(/^\d+,\d+$/);

    // The bucket: the kept manifests, each with one complete set of shard parts; the parts of the
    // checkpoints the keep-N policy deleted went with them.
    const kept = await listCheckpoints(checkpointDir);
    expect(kept.length).toBeGreaterThan(1);
    expect(kept.length).toBeLessThanOrEqual(3);
    for (const version of kept) {
      const names = await namesUnder(shardPartsPrefix(checkpointDir, version));
      expect(names.filter((n) => n.endsWith('.json')).sort()).toEqual([
        'shard-0-of-2.json',
        'shard-1-of-2.json',
      ]);
      expect(names.filter((n) => /^shard-[01]-of-2-t0-[0-9a-f]{16}\.edlemb$/.test(n))).toHaveLength(2);
    }
    for (const version of written)
      if (!kept.includes(version))
        expect(await namesUnder(shardPartsPrefix(checkpointDir, version))).toEqual([]);

    const latest = Math.max(...kept);
    const found = await readCheckpoint(
      `${checkpointDir}checkpoint-${String(latest).padStart(12, '0')}.manifest.json`,
    );
    expect(found.parameterServers).toEqual({ numShards: 2 });
    const markers = await readObjectStoreShardMarkers(checkpointDir, latest);
    expect(itemRowsOf(markers)).toBeGreaterThan(0);

    // `edl ps --restore-dir s3://...`: 2 shards and 3 shards hold the same rows, all of them.
    const ids = Float64Array.from({ length: VOCABULARY }, (_, i) => i);
    const pulled: Float32Array[] = [];
    for (const numShards of [2, 3]) {
      const shards = await restoredShards(numShards, checkpointDir, latest, s3Env);
      try {
        const described = await shards.client.describe();
        expect(described.reduce((n, d) => n + (d.tables[0]?.rows ?? 0), 0)).toBe(itemRowsOf(markers));
        pulled.push(await shards.client.pull('item', ids, { create: false }));
      } finally {
        shards.client.close();
        shards.stop();
      }
    }
    expect(pulled[1]).toEqual(pulled[0]);

    // The model exported at the end, its table read from the shard parts in the bucket.
    expect((await namesUnder(`${checkpointDir}model/`)).sort()).toEqual(['model.json', 'weights.bin']);
    const modelJson = new TextDecoder().decode(await readObject(`${checkpointDir}model/model.json`));
    expect(modelJson).toContain('"class_name":"Embedding"');
  }, 300_000);

  it('resumes a SIGKILLed job from S3 with 3 shards instead of 2, ignoring a shard part no manifest commits', async () => {
    const checkpointDir = 's3://bucket/resume/';
    const killer = jobKiller(40);
    const first = await trainClicks({
      dataDir: dir,
      checkpointDir,
      extra: ['--num-ps', '2', '--checkpoint-steps', '20'],
      env: s3Env,
      onStart: killer.onStart,
      onEvent: killer.onEvent,
    });
    const killedAt = killer.killedAt();
    expect(killedAt, first.stderr.slice(-3000)).toBeDefined();
    expect(first.code).not.toBe(0);
    const latest = Math.max(...(await listCheckpoints(checkpointDir)));
    expect(latest).toBeGreaterThanOrEqual(killedAt as number);
    const saved = await readObjectStoreShardMarkers(checkpointDir, latest);

    // What shards that wrote a later version leave when the master dies before its manifest: a
    // complete set of parts (the latest's rows, emptied), which no manifest commits.
    const orphanVersion = latest + 1000;
    const from = shardPartsPrefix(checkpointDir, latest);
    const to = shardPartsPrefix(checkpointDir, orphanVersion);
    for (const marker of saved) {
      for (const table of marker.tables) await putObject(`${to}${table.file}`, new Uint8Array(16));
      const name = `shard-${marker.shardIndex}-of-${marker.numShards}.json`;
      const text = new TextDecoder().decode(await readObject(`${from}${name}`));
      const planted = { ...JSON.parse(text), version: orphanVersion };
      await putObject(`${to}${name}`, new TextEncoder().encode(JSON.stringify(planted)));
    }

    const second = await trainClicks({ dataDir: dir, checkpointDir, extra: ['--num-ps', '3'], env: s3Env });
    const summary = succeededOnce(second);
    expect(summary.state).toBe('succeeded');
    // Each of the 3 shards restored its share of the 2 shards' rows of the committed checkpoint.
    expectShardsRestored(second, latest, 3, itemRowsOf(saved));
    // Named as a version or a part's folder nowhere (a bare number could be a pid, port or range).
    expect(second.stderr).not.toMatch(new RegExp(`(ersion":\\s*|checkpoint[- ]0*|ps-0*)${orphanVersion}\\b`));
  }, 400_000);
});
