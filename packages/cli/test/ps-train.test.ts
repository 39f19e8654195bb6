/**
 * `edl train --num-ps 2`: the job runner starts two `edl ps` shard processes with the job's token,
 * optimizer and seed, every worker pulls the rows of its minibatches' ids from them and pushes the
 * rows gradients back, the dense layers train through the master as without shards. The model
 * (fixtures/sparse-click-model.ts) learns a planted click model from a TFRecord file of
 * tf.train.Examples. Needs `pnpm build`.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SeededRandom } from '@edl/common';
import { readCheckpoint } from '@edl/master';
import { EmbeddingClient } from '@edl/proto';
import { decodeEmbeddingTable, readShardMarkers, shardCheckpointDirName, shardOfId } from '@edl/ps';
import { TFRecordWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeClick, IDS_PER_EXAMPLE } from './fixtures/sparse-click-model.js';
import { EDL_BIN, runEdl } from './helpers/run-edl.js';

const MODEL_DEF = fileURLToPath(new URL('./fixtures/sparse-click-model.ts', import.meta.url));
const VOCABULARY = 400;
const TRAIN_RECORDS = 1200;
const EPOCHS = 3;
let dir: string;

/** A planted model: each id has a score, an example's label is whether its ids' scores (+ noise) sum above 0. */
async function writeClicks(file: string, records: number, seed: number): Promise<void> {
  const planted = new SeededRandom(7);
  const score = Float64Array.from({ length: VOCABULARY }, () => planted.normal());
  const random = new SeededRandom(seed);
  const writer = TFRecordWriter.create(file);
  for (let i = 0; i < records; i++) {
    // Low ids are common, as in click logs.
    const ids = Array.from({ length: IDS_PER_EXAMPLE }, () => Math.floor(VOCABULARY * random.next() ** 2));
    const x = [random.normal(), random.normal()];
    const sum = ids.reduce((s, id) => s + (score[id] as number), 0) + 0.5 * (x[0] as number);
    writer.write(encodeClick(ids, x, sum + 0.3 * random.normal() > 0 ? 1 : 0));
  }
  await writer.close();
}

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-ps-train-'));
  await writeClicks(path.join(dir, 'train.tfrecord'), TRAIN_RECORDS, 1);
  await writeClicks(path.join(dir, 'valid.tfrecord'), 400, 2);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The JSON lines of stderr (the master's, the workers' and the shards'). */
  readonly events: Record<string, unknown>[];
}

function train(
  extra: readonly string[],
  onEvent?: (event: Record<string, unknown>) => void,
  checkpointDir = path.join(dir, `ckpt-${Math.random().toString(36).slice(2)}`),
  onStart?: (pid: number) => void,
  env: Readonly<Record<string, string>> = {},
): Promise<Run> {
  const args = [
    EDL_BIN,
    'train',
    '--model-def',
    MODEL_DEF,
    '--training-data',
    path.join(dir, 'train.tfrecord'),
    '--validation-data',
    path.join(dir, 'valid.tfrecord'),
    '--checkpoint-dir',
    checkpointDir,
    '--backend',
    'cpu',
    '--num-workers',
    '2',
    '--minibatch-size',
    '20',
    '--num-minibatches-per-task',
    '3',
    '--num-epochs',
    String(EPOCHS),
    '--stats',
    ...extra,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    if (child.pid !== undefined) onStart?.(child.pid);
    let stdout = '';
    let stderr = '';
    const events: Record<string, unknown>[] = [];
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    createInterface({ input: child.stderr }).on('line', (line) => {
      stderr += `${line}\n`;
      if (!line.startsWith('{')) return;
      try {
        const event = JSON.parse(line) as Record<string, unknown>;
        events.push(event);
        onEvent?.(event);
      } catch {
        // not an event
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, events }));
  });
}

interface Summary {
  state: string;
  records: { done: number; total: number; training: { done: number; total: number } };
  evaluations: { records: number; metrics: Record<string, number> }[];
  workers: { workerId: string; lost?: boolean; lastLoss?: number; records: Record<string, number> }[];
  gradients: { applied: number };
  rollBacks?: { shardIndex: number; cause: string; checkpoint: string | null; recordsRolledBack: number }[];
}

function summaryOf(run: Run): Summary {
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
  expect(line, run.stdout + run.stderr.slice(-3000)).toBeDefined();
  return JSON.parse(line as string) as Summary;
}

/** The summary of a job that succeeded with every training record applied once per epoch. */
function succeededOnce(run: Run): Summary {
  expect(run.code, run.stderr.slice(-3000)).toBe(0);
  const summary = summaryOf(run);
  const total = TRAIN_RECORDS * EPOCHS;
  expect(summary.records).toMatchObject({ done: total, total, training: { done: total, total } });
  return summary;
}

/**
 * The roll-back a relaunched shard caused (docs/master.md): the master's log line, checked against
 * the job's accounting. Every record is applied once per epoch in the master's count; the records
 * trained since the cut were trained again, and the workers' counts hold them twice.
 */
function rolledBack(run: Run, summary: Summary, shardIndex: number, to: 'start' | 'checkpoint') {
  const event = run.events.find((e) => typeof e.msg === 'string' && e.msg.startsWith('job rolled back'));
  expect(event, run.stderr.slice(-3000)).toBeDefined();
  expect(event?.msg).toMatch(
    to === 'start'
      ? `job rolled back to its start after parameter-server shard ${shardIndex} was relaunched`
      : new RegExp(
          `job rolled back to checkpoint .+ after parameter-server shard ${shardIndex} was relaunched`,
        ),
  );
  const recordsRolledBack = event?.recordsRolledBack as number;
  expect(recordsRolledBack).toBeGreaterThanOrEqual(0);
  const trained = summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0);
  expect(trained).toBe(TRAIN_RECORDS * EPOCHS + recordsRolledBack);
  // --stats says the same: the roll-back, where to, and the records trained again.
  expect(summary.rollBacks).toEqual([
    expect.objectContaining({
      shardIndex,
      checkpoint: to === 'start' ? null : expect.stringMatching(/checkpoint-\d+\.edlckpt$/),
      recordsRolledBack,
    }),
  ]);
  return event as Record<string, unknown>;
}

/** What each shard said when it stopped: its tables' rows and pushes. */
function shardsAtStop(run: Run): Map<number, { name: string; rows: number; pushes: number }[]> {
  const out = new Map<number, { name: string; rows: number; pushes: number }[]>();
  for (const e of run.events)
    if (e.event === 'stopped')
      out.set(e.shardIndex as number, e.tables as { name: string; rows: number; pushes: number }[]);
  return out;
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
    const workerCommand = JSON.stringify([
      process.execPath,
      EDL_BIN,
      'worker',
      '--model-def',
      MODEL_DEF,
      '--training-data',
      data,
      '--backend',
      'cpu',
      '--minibatch-size',
      '20',
    ]);
    const run = await runEdl([
      'master',
      '--training-data',
      data,
      '--num-workers',
      '2',
      '--num-ps',
      '2',
      '--minibatch-size',
      '20',
      '--num-minibatches-per-task',
      '3',
      '--optimizer',
      'adagrad',
      '--learning-rate',
      '0.2',
      '--seed',
      '5',
      '--worker-command',
      workerCommand,
    ]);
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stdout).toMatch(/^EDL_PS_ADDRESSES=127\.0\.0\.1:\d+,127\.0\.0\.1:\d+$/m);
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

/** `edl ps` shards started from a checkpoint's shard files; resolves once all listen. */
async function restoredShards(
  numShards: number,
  checkpointDir: string,
  version: number,
): Promise<{ client: EmbeddingClient; stop: () => void }> {
  const token = 'restore-token';
  const children = [...Array(numShards).keys()].map((shardIndex) =>
    spawn(
      process.execPath,
      [
        EDL_BIN,
        'ps',
        '--shard-index',
        String(shardIndex),
        '--num-shards',
        String(numShards),
        '--optimizer',
        JSON.stringify({ type: 'adagrad', learningRate: 0.2 }),
        '--restore-dir',
        checkpointDir,
        '--restore-version',
        String(version),
      ],
      { env: { ...process.env, EDL_JOB_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] },
    ),
  );
  const stop = () => {
    for (const child of children) child.kill('SIGKILL');
  };
  const addresses = await Promise.all(
    children.map(
      (child) =>
        new Promise<string>((resolve, reject) => {
          child.once('close', (code) => reject(new Error(`edl ps exited with ${code} before listening`)));
          createInterface({ input: child.stdout }).on('line', (line) => {
            if (line.startsWith('{"event":"listening"'))
              resolve((JSON.parse(line) as { address: string }).address);
          });
        }),
    ),
  ).catch((error: unknown) => {
    stop();
    throw error;
  });
  return { client: new EmbeddingClient({ addresses, token, shardOfId }), stop };
}

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
    let killed: number | undefined;
    let committed = false;
    const listening: Record<string, unknown>[] = [];
    const checkpointDir = path.join(dir, 'ckpt-rollback');
    const cutCopy = path.join(dir, 'cut-copy');
    const keepCut = cutKeeper(checkpointDir, cutCopy);
    const run = await train(
      ['--num-ps', '2', '--checkpoint-steps', '20'],
      (event) => {
        keepCut(event);
        if (event.event === 'listening') listening.push(event);
        if (typeof event.msg === 'string' && event.msg.startsWith('checkpoint written')) committed = true;
        const shard1 = listening.find((e) => e.shardIndex === 1);
        if (killed === undefined && committed && typeof shard1?.pid === 'number') {
          killed = shard1.pid;
          process.kill(shard1.pid, 'SIGKILL');
        }
      },
      checkpointDir,
    );
    expect(killed).toBeDefined();
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
    const children = new Set<number>();
    let killedAt: number | undefined;
    let main: number | undefined;
    const first = train(
      ['--num-ps', '2', '--checkpoint-steps', '20'],
      (event) => {
        // The shards and workers outlive a SIGKILLed `edl train`: they are killed here too.
        if (typeof event.pid === 'number' && (event.event === 'listening' || event.msg === 'progress'))
          children.add(event.pid);
        if (
          killedAt === undefined &&
          typeof event.msg === 'string' &&
          event.msg.startsWith('checkpoint written') &&
          (event.modelVersion as number) >= 40
        ) {
          killedAt = event.modelVersion as number;
          if (main !== undefined) process.kill(main, 'SIGKILL');
          for (const pid of children) {
            try {
              process.kill(pid, 'SIGKILL');
            } catch {
              // already gone
            }
          }
        }
      },
      checkpointDir,
      (pid) => {
        main = pid;
      },
    );
    const killed = await first;
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
    const restored = second.events.find(
      (e) => e.msg === `parameter-server shards restored from checkpoint ${latest}`,
    );
    expect(restored, second.stderr.slice(-3000)).toBeDefined();
    const rows = String(restored?.rows).split(',').map(Number);
    expect(rows).toHaveLength(3);
    expect(rows.every((r) => r > 0)).toBe(true);
    expect(rows.reduce((a, b) => a + b, 0)).toBe(
      saved.reduce((n, m) => n + (m.tables.find((t) => t.name === 'item')?.rows ?? 0), 0),
    );
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
