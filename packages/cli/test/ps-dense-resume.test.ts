/**
 * `edl train --num-ps 2` resumed from a checkpoint written with the other `--dense-on`: refused at
 * start-up, before any worker trains, naming the checkpoint and the flag to pass (with dense
 * variables on the shards the master's file holds their initial values; with them in the master
 * the shard parts hold none). The placement is in the checkpoint's header; a checkpoint written
 * before that field is judged by its shard parts. A matching resume with dense variables on the
 * shards is ps-train.test.ts's 'resumes the master and restores the shards ...'; with them in the
 * master, it is here. Needs `pnpm build`.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoint, listCheckpoints, writeCheckpoint } from '@edl/master';
import { readShardMarkers } from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clickDataDir, jobKiller, type Run, succeededOnce, trainClicks } from './helpers/ps-job.js';
import { EDL_BIN } from './helpers/run-edl.js';

let dir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await clickDataDir('edl-ps-dense-resume-');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function train(checkpointDir: string, extra: readonly string[], killer?: ReturnType<typeof jobKiller>) {
  return trainClicks({
    dataDir: dir,
    checkpointDir,
    extra,
    env: process.env,
    ...(killer === undefined ? {} : { onStart: killer.onStart, onEvent: killer.onEvent }),
  });
}

/** A job of 2 shards with `--dense-on denseOn`, SIGKILLed at its checkpoint of version 40 or later. */
async function killedJob(checkpointDir: string, denseOn: 'shards' | 'master'): Promise<string> {
  const killer = jobKiller(40);
  const run = await train(
    checkpointDir,
    ['--num-ps', '2', '--dense-on', denseOn, '--checkpoint-steps', '20'],
    killer,
  );
  expect(killer.killedAt(), run.stderr.slice(-3000)).toBeDefined();
  const found = await findCheckpoint(checkpointDir);
  if (found === undefined) throw new Error(`no checkpoint in ${checkpointDir}`);
  expect(found.checkpoint.parameterServers).toEqual({ numShards: 2, denseOn });
  return found.path;
}

/**
 * A resume refused at start-up: exit status 1, the one line naming the checkpoint, and no worker
 * trained (no checkpoint after the one resumed from, no worker's progress).
 */
async function expectRefused(
  run: Run,
  checkpointDir: string,
  checkpoint: string,
  written: 'shards' | 'master',
): Promise<void> {
  const where = written === 'shards' ? 'on the parameter-server shards' : 'in the master';
  expect(run.code, run.stderr.slice(-3000)).toBe(1);
  expect(run.stderr).toContain(
    `the checkpoint at ${checkpoint} holds its dense variables ${where} (--dense-on ${written}); resume with --dense-on ${written}, or start a new job`,
  );
  expect(run.stdout).not.toContain('"state"');
  expect(run.events.some((e) => e.msg === 'progress')).toBe(false);
  expect((await findCheckpoint(checkpointDir))?.path).toBe(checkpoint);
}

/** Rewrites the newest checkpoint of `checkpointDir` as one written before the `denseOn` field. */
async function withoutPlacementField(checkpointDir: string): Promise<void> {
  const found = await findCheckpoint(checkpointDir);
  if (found?.checkpoint.parameterServers === undefined)
    throw new Error(`no shard checkpoint in ${checkpointDir}`);
  const kept = (await listCheckpoints(checkpointDir)).length;
  const { denseOn: _, ...before } = found.checkpoint.parameterServers;
  await writeCheckpoint(checkpointDir, { ...found.checkpoint, parameterServers: before }, kept);
  expect((await findCheckpoint(checkpointDir))?.checkpoint.parameterServers).toEqual({ numShards: 2 });
}

describe('edl train --num-ps 2 resumed with the other --dense-on', () => {
  it('refuses a checkpoint with the dense variables on the shards resumed with --dense-on master', async () => {
    const checkpointDir = path.join(dir, 'ckpt-on-shards');
    const checkpoint = await killedJob(checkpointDir, 'shards');
    const version = (await findCheckpoint(checkpointDir))?.checkpoint.store.version as number;
    expect(readShardMarkers(checkpointDir, version).every((m) => m.dense !== undefined)).toBe(true);
    const resume = ['--num-ps', '2', '--dense-on', 'master'];
    await expectRefused(await train(checkpointDir, resume), checkpointDir, checkpoint, 'shards');
    // Written before the field: its shard parts' dense parts tell.
    await withoutPlacementField(checkpointDir);
    await expectRefused(await train(checkpointDir, resume), checkpointDir, checkpoint, 'shards');
  }, 300_000);

  it('refuses a checkpoint with the dense variables in the master resumed with them on the shards, and resumes with --dense-on master', async () => {
    const checkpointDir = path.join(dir, 'ckpt-on-master');
    const checkpoint = await killedJob(checkpointDir, 'master');
    const version = (await findCheckpoint(checkpointDir))?.checkpoint.store.version as number;
    expect(readShardMarkers(checkpointDir, version).some((m) => m.dense !== undefined)).toBe(false);
    // --dense-on shards is the default with --num-ps.
    await expectRefused(await train(checkpointDir, ['--num-ps', '2']), checkpointDir, checkpoint, 'master');
    await withoutPlacementField(checkpointDir);
    await expectRefused(await train(checkpointDir, ['--num-ps', '2']), checkpointDir, checkpoint, 'master');

    const resumed = await train(checkpointDir, ['--num-ps', '2', '--dense-on', 'master']);
    succeededOnce(resumed);
    expect(resumed.stderr).toContain(`resumed from checkpoint ${checkpoint}`);
    const final = await findCheckpoint(checkpointDir);
    expect(final?.checkpoint.store.version).toBeGreaterThan(version);
    expect(final?.checkpoint.parameterServers).toEqual({ numShards: 2, denseOn: 'master' });
  }, 400_000);
});
