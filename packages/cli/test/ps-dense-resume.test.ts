/**
 * `edl train --num-ps 2` (and `edl master`) resumed from a checkpoint written with the other
 * `--dense-on`: refused at start-up, before any worker trains, naming the checkpoint and the flag
 * to pass (with dense variables on the shards the master's file holds their initial values; with
 * them in the master the shard parts hold none). The placement is in the checkpoint's header; a
 * checkpoint written before that field is judged by its shard parts. Local checkpoints, and one in
 * S3 (a real s3rver process). A matching resume with dense variables on the shards is
 * ps-train.test.ts's 'resumes the master and restores the shards ...' (in S3:
 * ps-s3-checkpoint.test.ts's 'resumes a SIGKILLed job from S3 ...'); with them in the master, it
 * is here. Needs `pnpm build`.
 */
import { existsSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { findCheckpoint, listCheckpoints, writeCheckpoint } from '@edl/master';
import { shardPartsOf } from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLICK_MASTER_OPTIONS,
  clickDataDir,
  clickWorkerCommand,
  jobKiller,
  type Run,
  succeededOnce,
  trainClicks,
} from './helpers/ps-job.js';
import { EDL_BIN, runEdl } from './helpers/run-edl.js';
import { bucketS3rverForSuite } from './helpers/s3rver-env.js';

let dir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await clickDataDir('edl-ps-dense-resume-');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface JobPlace {
  readonly checkpointDir: string;
  /** The job's environment: this process's, or an s3rver account's. */
  readonly env: NodeJS.ProcessEnv;
}

function train(job: JobPlace, extra: readonly string[], killer?: ReturnType<typeof jobKiller>) {
  return trainClicks({
    dataDir: dir,
    ...job,
    extra,
    ...(killer === undefined ? {} : { onStart: killer.onStart, onEvent: killer.onEvent }),
  });
}

/** A job of 2 shards with `--dense-on denseOn`, SIGKILLed at its checkpoint of version 40 or later. */
async function killedJob(job: JobPlace, denseOn: 'shards' | 'master'): Promise<string> {
  const killer = jobKiller(40);
  const run = await train(job, ['--num-ps', '2', '--dense-on', denseOn, '--checkpoint-steps', '20'], killer);
  expect(killer.killedAt(), run.stderr.slice(-3000)).toBeDefined();
  const found = await findCheckpoint(job.checkpointDir);
  if (found === undefined) throw new Error(`no checkpoint in ${job.checkpointDir}`);
  expect(found.checkpoint.parameterServers).toEqual({ numShards: 2 });
  expect(found.checkpoint.denseOn).toBe(denseOn);
  return found.path;
}

/**
 * A resume refused at start-up: exit status 1, the one line naming the checkpoint, and no worker
 * trained (no checkpoint after the one resumed from, no worker's progress).
 */
async function expectRefused(
  run: Run,
  { checkpointDir, env }: JobPlace,
  checkpoint: string,
  written: 'shards' | 'master',
): Promise<void> {
  const where = written === 'shards' ? 'on the parameter-server shards' : 'in the master';
  expect(run.code, run.stderr.slice(-3000)).toBe(1);
  expect(run.stderr).toContain(
    `the checkpoint at ${checkpoint} holds its dense variables ${where} (--dense-on ${written}); resume with --dense-on ${written}, or start a new job`,
  );
  expect(run.stdout).not.toContain('"state"');
  const secret = env.AWS_SECRET_ACCESS_KEY;
  if (secret !== undefined) expect(run.stderr).not.toContain(secret);
  expect(run.events.some((e) => e.msg === 'progress')).toBe(false);
  expect((await findCheckpoint(checkpointDir))?.path).toBe(checkpoint);
}

/** Rewrites the newest checkpoint of `checkpointDir` as one written before the `denseOn` field. */
async function withoutPlacementField(checkpointDir: string): Promise<void> {
  const found = await findCheckpoint(checkpointDir);
  if (found?.checkpoint.denseOn === undefined) throw new Error(`no placement recorded in ${checkpointDir}`);
  const kept = (await listCheckpoints(checkpointDir)).length;
  const { denseOn: _, ...before } = found.checkpoint;
  await writeCheckpoint(checkpointDir, before, kept);
  const rewritten = (await findCheckpoint(checkpointDir))?.checkpoint;
  expect(rewritten?.parameterServers).toEqual({ numShards: 2 });
  expect(rewritten?.denseOn).toBeUndefined();
}

/** Whether the shard parts of `checkpointDir`'s newest checkpoint hold dense parts: each, or none. */
async function denseParts(checkpointDir: string): Promise<'each' | 'none' | 'some'> {
  const version = (await findCheckpoint(checkpointDir))?.checkpoint.store.version as number;
  const { markers } = await shardPartsOf(checkpointDir, version);
  const dense = markers.filter((m) => m.dense !== undefined).length;
  return dense === markers.length ? 'each' : dense === 0 ? 'none' : 'some';
}

/**
 * A job with its dense variables on the shards, resumed with `--dense-on master`: refused, with the
 * placement in the checkpoint's header and, rewritten without it, with its dense parts only.
 */
async function expectShardsCheckpointRefused(job: JobPlace): Promise<void> {
  const checkpoint = await killedJob(job, 'shards');
  expect(await denseParts(job.checkpointDir)).toBe('each');
  const resume = ['--num-ps', '2', '--dense-on', 'master'];
  await expectRefused(await train(job, resume), job, checkpoint, 'shards');
  await withoutPlacementField(job.checkpointDir);
  await expectRefused(await train(job, resume), job, checkpoint, 'shards');
}

describe('edl train --num-ps 2 resumed with the other --dense-on', () => {
  it('refuses a checkpoint with the dense variables on the shards resumed with --dense-on master', async () => {
    const job = { checkpointDir: path.join(dir, 'ckpt-on-shards'), env: process.env };
    await expectShardsCheckpointRefused(job);
    // `edl master` records and checks the placement its own workers take: EDL_DENSE_ON here.
    const checkpoint = (await findCheckpoint(job.checkpointDir))?.path as string;
    const data = path.join(dir, 'train.tfrecord');
    const master = await runEdl(
      [
        'master',
        '--training-data',
        data,
        '--checkpoint-dir',
        job.checkpointDir,
        '--num-workers',
        '2',
        '--num-ps',
        '2',
        ...CLICK_MASTER_OPTIONS,
        '--worker-command',
        clickWorkerCommand('--training-data', data),
      ],
      undefined,
      undefined,
      { ...process.env, EDL_DENSE_ON: 'master' },
    );
    await expectRefused({ ...master, events: [] }, job, checkpoint, 'shards');
  }, 300_000);

  it('refuses a checkpoint with the dense variables in the master resumed with them on the shards, and resumes with --dense-on master', async () => {
    const job = { checkpointDir: path.join(dir, 'ckpt-on-master'), env: process.env };
    const checkpoint = await killedJob(job, 'master');
    const version = (await findCheckpoint(job.checkpointDir))?.checkpoint.store.version as number;
    expect(await denseParts(job.checkpointDir)).toBe('none');
    // --dense-on shards is the default with --num-ps.
    await expectRefused(await train(job, ['--num-ps', '2']), job, checkpoint, 'master');
    await withoutPlacementField(job.checkpointDir);
    await expectRefused(await train(job, ['--num-ps', '2']), job, checkpoint, 'master');

    const resumed = await train(job, ['--num-ps', '2', '--dense-on', 'master']);
    succeededOnce(resumed);
    expect(resumed.stderr).toContain(`resumed from checkpoint ${checkpoint}`);
    const final = await findCheckpoint(job.checkpointDir);
    expect(final?.checkpoint.store.version).toBeGreaterThan(version);
    expect(final?.checkpoint.parameterServers).toEqual({ numShards: 2 });
    expect(final?.checkpoint.denseOn).toBe('master');
  }, 400_000);
});

describe('edl train --num-ps 2 --checkpoint-dir s3://... resumed with the other --dense-on', () => {
  // This process reads and rewrites the checkpoint through @edl/storage, as the job does.
  const s3 = bucketS3rverForSuite();

  it('refuses a checkpoint in S3 with the dense variables on the shards, naming its manifest, never a credential', async () => {
    await expectShardsCheckpointRefused({
      checkpointDir: 's3://bucket/dense-resume/',
      env: s3().env,
    });
  }, 400_000);
});
