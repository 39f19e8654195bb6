/**
 * `edl train --num-ps 2`: the job runner starts two `edl ps` shard processes with the job's token,
 * optimizer and seed, every worker pulls the rows of its minibatches' ids from them and pushes the
 * rows gradients back, the dense layers train through the master as without shards. The model
 * (fixtures/sparse-click-model.ts) learns a planted click model from a TFRecord file of
 * tf.train.Examples. Needs `pnpm build`.
 */
import { cpSync, existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { readCheckpoint } from '@edl/master';
import { decodeEmbeddingTable, readShardMarkers, shardCheckpointDirName, shardOfId } from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CLICK_MASTER_OPTIONS,
  clickDataDir,
  clickWorkerCommand,
  EPOCHS,
  expectShardsRestored,
  itemRowsOf,
  jobKiller,
  MODEL_DEF,
  type Run,
  restoredShards,
  rolledBack,
  type Summary,
  shardKillerAfterCheckpoint,
  shardsAtStop,
  succeededOnce,
  TRAIN_RECORDS,
  trainClicks,
  VOCABULARY,
} from './helpers/ps-job.js';
import { EDL_BIN, runEdl } from './helpers/run-edl.js';

let dir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await clickDataDir('edl-ps-train-');
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function train(
  extra: readonly string[],
  onEvent?: (event: Record<string, unknown>) => void,
  checkpointDir = path.join(dir, `ckpt-${Math.random().toString(36).slice(2)}`),
  onStart?: (pid: number) => void,
  env: Readonly<Record<string, string>> = {},
): Promise<Run> {
  return trainClicks({
    dataDir: dir,
    checkpointDir,
    extra,
    ...(onEvent === undefined ? {} : { onEvent }),
    ...(onStart === undefined ? {} : { onStart }),
    env: { ...process.env, ...env },
  });
}

describe('edl train --num-ps 2', () => {
  it('trains the embedding rows on two shards and the dense layers on the master, each record once', async () => {
    const run = await train(['--num-ps', '2']);
    const summary = succeededOnce(run);
    expect(summary.state).toBe('succeeded');
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(TRAIN_RECORDS * EPOCHS);
    // Both shards created rows of the table (ids are placed by hash) and applied pushes.
    const shards = shardsAtStop(run);
    expect([...shards.keys()].sort()).toEqual([0, 1]);
    let rows = 0;
    for (const tables of shards.values()) {
      const item = tables.find((t) => t.name === 'item');
      expect(item?.rows).toBeGreaterThan(0);
      expect(item?.pushes).toBeGreaterThan(0);
      rows += item?.rows ?? 0;
    }
    // Each row on one shard only; evaluation looks rows up without creating any.
    expect(rows).toBeLessThanOrEqual(VOCABULARY);
    // The loss falls from the untrained model's (about ln 2 = 0.69), and the planted model is learnt.
    const losses = run.events
      .filter((e) => e.msg === 'progress' && typeof e.loss === 'number')
      .map((e) => e.loss as number);
    expect(losses.length).toBeGreaterThan(1);
    const lastLosses = summary.workers.flatMap((w) => (w.lastLoss === undefined ? [] : [w.lastLoss]));
    expect(Math.max(...lastLosses)).toBeLessThan(0.6);
    const final = summary.evaluations.at(-1);
    expect(final?.records).toBe(400);
    expect(final?.metrics.auc).toBeGreaterThan(0.75);
  }, 180_000);

  it('keeps exactly-once task accounting when a worker is SIGKILLed mid-job', async () => {
    let killed: number | undefined;
    let killedWorker: string | undefined;
    const run = await train(['--num-ps', '2'], (event) => {
      // Whichever worker first has 100 records: on a fast machine one worker can take nearly the
      // whole job before the other reports any progress.
      if (
        killed === undefined &&
        event.msg === 'progress' &&
        ((event.records as number | undefined) ?? 0) >= 100 &&
        typeof event.pid === 'number'
      ) {
        killed = event.pid;
        killedWorker = event.worker as string;
        process.kill(event.pid, 'SIGKILL');
      }
    });
    expect(killed).toBeDefined();
    const summary = succeededOnce(run);
    expect(summary.workers.filter((w) => w.lost).map((w) => w.workerId)).toEqual([killedWorker]);
    expect(shardsAtStop(run).size).toBe(2);
  }, 180_000);

  it('relaunches a SIGKILLed shard on the same address and the job still succeeds, each record once', async () => {
    let killed: number | undefined;
    const listening: Record<string, unknown>[] = [];
    let progressSinceStart = 0;
    const run = await train(['--num-ps', '2'], (event) => {
      if (event.event === 'listening') listening.push(event);
      if (event.msg === 'progress') progressSinceStart++;
      const shard0 = listening.find((e) => e.shardIndex === 0);
      if (killed === undefined && progressSinceStart >= 2 && typeof shard0?.pid === 'number') {
        killed = shard0.pid;
        process.kill(shard0.pid, 'SIGKILL');
      }
    });
    expect(killed).toBeDefined();
    const summary = succeededOnce(run);
    // No checkpoint before the kill: every shard back to the initializer, tasks from the start.
    const rollback = rolledBack(run, summary, 0, 'start');
    expect(rollback.rows).toBe('0,0');
    // The same address again, from a new process; the job's log says what was lost.
    const shard0 = listening.filter((e) => e.shardIndex === 0);
    expect(shard0).toHaveLength(2);
    expect(shard0[1]?.address).toBe(shard0[0]?.address);
    expect(shard0[1]?.pid).not.toBe(killed);
    expect(run.stderr).toMatch(
      /warning: Parameter-server shard 0 \(127\.0\.0\.1:\d+\) exited with signal SIGKILL: relaunched on the same address\. Its embedding rows restart from the initializer/,
    );
    // The relaunched shard learnt its rows again from the workers' next pulls and pushes.
    const rows = shardsAtStop(run)
      .get(0)
      ?.find((t) => t.name === 'item');
    expect(rows?.rows).toBeGreaterThan(0);
  }, 180_000);

  it('edl master --num-ps 2 launches the shards, prints their addresses and hands them to its workers', async () => {
    const data = path.join(dir, 'train.tfrecord');
    const run = await runEdl([
      'master',
      '--training-data',
      data,
      '--num-workers',
      '2',
      '--num-ps',
      '2',
      ...CLICK_MASTER_OPTIONS,
      '--seed',
      '5',
      '--worker-command',
      clickWorkerCommand('--training-data', data),
    ]);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stdout).toMatch(/^EDL_PS_ADDRESSES=127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/m);
    // The placement it records in its checkpoints, printed for workers started by hand.
    expect(run.stdout).toMatch(/^EDL_DENSE_ON=shards$/m);
    const result = JSON.parse(
      run.stdout.split('\n').find((l) => l.startsWith('{"state"')) as string,
    ) as Summary;
    expect(result.state).toBe('succeeded');
    expect(result.records.training).toEqual({ done: TRAIN_RECORDS, total: TRAIN_RECORDS });
    // Both shards took the table the workers declared, with the job's optimizer.
    const stopped = run.stderr
      .split('\n')
      .filter((l) => l.startsWith('[ps-') && l.includes('"event":"stopped"'));
    expect(stopped).toHaveLength(2);
    for (const line of stopped) expect(line).toMatch(/"name":"item","rows":[1-9]\d*,"pushes":[1-9]/);
  }, 180_000);

  it('fails a job whose model has distributed embeddings but no --num-ps with one clear line', async () => {
    const run = await train(['--num-epochs', '1']);
    expect(run.code).toBe(1);
    expect(run.stdout + run.stderr).toContain(
      "NO_PARAMETER_SERVERS: The model has distributed embedding layers (tables 'item') but the worker has no parameter-server shards: run the job with --num-ps N",
    );
  }, 120_000);
});

/** The rows of every id the click log can hold, as the shard files of a checkpoint have them. */
async function rowsInFiles(checkpointDir: string, version: number): Promise<Float32Array> {
  const ids = Float64Array.from({ length: VOCABULARY }, (_, i) => i);
  const out = new Float32Array(VOCABULARY * 8);
  const versionDir = path.join(checkpointDir, shardCheckpointDirName(version));
  for (const marker of readShardMarkers(checkpointDir, version)) {
    const file = marker.tables.find((t) => t.name === 'item')?.file as string;
    const table = decodeEmbeddingTable(new Uint8Array(await readFile(path.join(versionDir, file))), file);
    // Ids the shard never created read as the initializer's value, as a lookup on a shard does.
    ids.forEach((id, i) => {
      if (shardOfId(id, marker.numShards) === marker.shardIndex)
        out.set(table.lookup(new Float64Array([id])), i * 8);
    });
  }
  return out;
}

describe('edl train --num-ps 2 checkpoints', () => {
  it('commits the shard files with the master file, and shards restore them, re-sharded to 3', async () => {
    const checkpointDir = path.join(dir, 'ckpt-shards');
    const run = await train(['--num-ps', '2', '--checkpoint-steps', '40'], undefined, checkpointDir);
    succeededOnce(run);
    const names = await readdir(checkpointDir);
    const versions = names
      .map((n) => /^checkpoint-(\d{12})\.edlckpt$/.exec(n)?.[1])
      .filter((v): v is string => v !== undefined)
      .map(Number);
    expect(versions.length).toBeGreaterThan(1);
    // Every kept checkpoint has its shard files, and no shard files outlive their checkpoint.
    expect(names.filter((n) => n.startsWith('ps-')).sort()).toEqual(
      versions.map((v) => shardCheckpointDirName(v)).sort(),
    );
    const latest = Math.max(...versions);
    const checkpoint = await readCheckpoint(
      path.join(checkpointDir, `checkpoint-${String(latest).padStart(12, '0')}.edlckpt`),
    );
    expect(checkpoint.parameterServers).toEqual({ numShards: 2 });
    const markers = readShardMarkers(checkpointDir, latest);
    expect(markers.map((m) => m.tables.map((t) => t.name))).toEqual([['item'], ['item']]);
    const saved = await rowsInFiles(checkpointDir, latest);

    const ids = Float64Array.from({ length: VOCABULARY }, (_, i) => i);
    for (const numShards of [2, 3]) {
      const shards = await restoredShards(numShards, checkpointDir, latest);
      try {
        const described = await shards.client.describe();
        expect(described.reduce((n, d) => n + (d.tables[0]?.rows ?? 0), 0)).toBe(
          markers.reduce((n, m) => n + (m.tables[0]?.rows ?? 0), 0),
        );
        expect(await shards.client.pull('item', ids, { create: false })).toEqual(saved);
      } finally {
        shards.client.close();
        shards.stop();
      }
    }
  }, 240_000);

  it('relaunches a SIGKILLed shard from the last committed checkpoint, each record once', async () => {
    const checkpointDir = path.join(dir, 'ckpt-rollback');
    const cutCopy = path.join(dir, 'cut-copy');
    const keepCut = cutKeeper(checkpointDir, cutCopy);
    const killer = shardKillerAfterCheckpoint(1);
    const run = await train(
      ['--num-ps', '2', '--checkpoint-steps', '20'],
      (event) => {
        keepCut(event);
        killer.onEvent(event);
      },
      checkpointDir,
    );
    expect(killer.killed()).toBeDefined();
    const summary = succeededOnce(run);
    expect(run.stderr).toMatch(
      /warning: Parameter-server shard 1 \(127\.0\.0\.1:\d+\) exited with signal SIGKILL: relaunched on the same address\. Its embedding rows restart from the checkpoint of model version \d+ in /,
    );
    // Both shards, the live one too, hold the rows of the cut's shard files after the roll-back.
    const rollback = rolledBack(run, summary, 1, 'checkpoint');
    const markers = readShardMarkers(cutCopy, rollback.cutVersion as number);
    expect(rollback.rows).toBe(markers.map((m) => m.tables.find((t) => t.name === 'item')?.rows).join(','));
  }, 240_000);
});

/**
 * Copies the shard files of the cut a job rolls back to into `cutCopy` when the roll-back is
 * logged, before a later checkpoint removes them (3 are kept).
 */
function cutKeeper(checkpointDir: string, cutCopy: string): (event: Record<string, unknown>) => void {
  return (event) => {
    if (typeof event.msg === 'string' && event.msg.startsWith('job rolled back')) {
      const name = shardCheckpointDirName(event.cutVersion as number);
      cpSync(path.join(checkpointDir, name), path.join(cutCopy, name), { recursive: true });
    }
  };
}

describe('edl train --num-ps 2: a worker lost with its rows push on the way', () => {
  it('rolls the job back to the last cut when the push never reached the shards, each record once', async () => {
    const checkpointDir = path.join(dir, 'ckpt-lost-push');
    const cutCopy = path.join(dir, 'cut-copy-lost-push');
    // Test only: the first worker at its 30th step (past the checkpoints of versions 20 and 40 of
    // the 180 steps) SIGKILLs itself after the master accepted the step, before pushing its rows.
    const exitFile = path.join(dir, 'exit-before-push');
    const run = await train(
      ['--num-ps', '2', '--checkpoint-steps', '20'],
      cutKeeper(checkpointDir, cutCopy),
      checkpointDir,
      undefined,
      { EDL_TEST_EXIT_BEFORE_PUSH: `${exitFile}:30` },
    );
    expect(existsSync(exitFile)).toBe(true);
    const summary = succeededOnce(run);
    const lost = summary.workers.filter((w) => w.lost).map((w) => w.workerId);
    expect(lost).toHaveLength(1);
    // Shard 0 is the first asked, and neither shard applied any of the step.
    const cause = `worker ${lost[0]} was lost with its rows push of version \\d+ missing at parameter-server shard 0 \\(its last push of the worker is of version \\d+\\)`;
    const rollback = run.events.find((e) => typeof e.msg === 'string' && e.msg.startsWith('job rolled back'));
    expect(rollback?.msg, run.stderr.slice(-3000)).toMatch(
      new RegExp(`^job rolled back to checkpoint .+ after ${cause}$`),
    );
    const recordsRolledBack = rollback?.recordsRolledBack as number;
    expect(summary.rollBacks).toEqual([
      expect.objectContaining({
        shardIndex: 0,
        cause: expect.stringMatching(new RegExp(`^${cause}$`)),
        recordsRolledBack,
      }),
    ]);
    // The master applied a minibatch of 20 records per gradient: the records since the cut twice.
    expect(recordsRolledBack).toBeGreaterThan(0);
    expect(summary.gradients.applied * 20).toBe(TRAIN_RECORDS * EPOCHS + recordsRolledBack);
    // Every shard holds the cut's rows again, then trains on from there.
    const markers = readShardMarkers(cutCopy, rollback?.cutVersion as number);
    expect(rollback?.rows).toBe(markers.map((m) => m.tables.find((t) => t.name === 'item')?.rows).join(','));
  }, 240_000);

  it("does not roll back when the lost worker's push reached every shard", async () => {
    // Test only: the first worker at its 10th step SIGKILLs itself once every shard answered its
    // rows push, before its next report: the master still has that push on the way.
    const exitFile = path.join(dir, 'exit-after-push');
    const run = await train(['--num-ps', '2'], undefined, undefined, undefined, {
      EDL_TEST_EXIT_AFTER_PUSH: `${exitFile}:10`,
    });
    expect(existsSync(exitFile)).toBe(true);
    const summary = succeededOnce(run);
    const lost = summary.workers.filter((w) => w.lost).map((w) => w.workerId);
    expect(lost).toHaveLength(1);
    const settled = run.events.find(
      (e) => typeof e.msg === 'string' && e.msg.startsWith(`worker ${lost[0]} was lost after its rows push`),
    );
    expect(settled?.msg, run.stderr.slice(-3000)).toMatch(
      /reached every parameter-server shard: no roll-back$/,
    );
    expect(summary.rollBacks).toBeUndefined();
    expect(run.events.some((e) => typeof e.msg === 'string' && e.msg.startsWith('job rolled back'))).toBe(
      false,
    );
    // No roll-back: the master applied a minibatch of 20 records per gradient, each record once.
    expect(summary.gradients.applied * 20).toBe(TRAIN_RECORDS * EPOCHS);
  }, 240_000);
});

describe('edl train --num-ps after a SIGKILL of the job', () => {
  it('resumes the master and restores the shards from the checkpoint, re-sharded from 2 to 3, each record once', async () => {
    const checkpointDir = path.join(dir, 'ckpt-master-kill');
    // The shards and workers outlive a SIGKILLed `edl train`: they are killed too.
    const killer = jobKiller(40);
    const first = train(
      ['--num-ps', '2', '--checkpoint-steps', '20'],
      killer.onEvent,
      checkpointDir,
      killer.onStart,
    );
    const killed = await first;
    const killedAt = killer.killedAt();
    expect(killedAt, killed.stderr.slice(-3000)).toBeDefined();
    expect(killed.code).not.toBe(0);
    const latest = (await loadLatestVersion(checkpointDir)) as number;
    expect(latest).toBeGreaterThanOrEqual(killedAt as number);
    const saved = readShardMarkers(checkpointDir, latest);

    const second = await train(['--num-ps', '3'], undefined, checkpointDir);
    const summary = succeededOnce(second);
    expect(summary.state).toBe('succeeded');
    // Each of the 3 shards restored its share of the 2 shards' rows (RestoreShard, before the master
    // served a task): together, all of them.
    expectShardsRestored(second, latest, 3, itemRowsOf(saved));
  }, 300_000);
});

/** The newest committed checkpoint's version in `checkpointDir`. */
async function loadLatestVersion(checkpointDir: string): Promise<number | undefined> {
  const versions = (await readdir(checkpointDir))
    .map((n) => /^checkpoint-(\d{12})\.edlckpt$/.exec(n)?.[1])
    .filter((v): v is string => v !== undefined)
    .map(Number);
  return versions.length === 0 ? undefined : Math.max(...versions);
}

describe('edl worker --ps-addresses', () => {
  it('refuses an address that is not HOST:PORT, naming the shard, before anything loads', async () => {
    const run = await runEdl([
      'worker',
      '--model-def',
      MODEL_DEF,
      '--training-data',
      'x.tfrecord',
      '--ps-addresses',
      '127.0.0.1:7001,localhost',
    ]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(
      "--ps-addresses must be HOST:PORT of each parameter-server shard, comma-separated, but shard 1 is 'localhost'",
    );
  });
});
