/**
 * What the `edl train --num-ps` tests share: the sparse click-model data (fixtures/sparse-click-model.ts),
 * the built `edl train` run with its events, the job's accounting checks, and `edl ps` shards
 * started from a checkpoint's shard parts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { SeededRandom } from '@edl/common';
import { findCheckpoint } from '@edl/master';
import { EmbeddingClient } from '@edl/proto';
import { readShardMarkers, shardCheckpointDirName, shardOfId } from '@edl/ps';
import { TFRecordWriter } from '@edl/recordio';
import { putObject } from '@edl/storage';
import { expect } from 'vitest';
import { encodeClick, IDS_PER_EXAMPLE } from '../fixtures/sparse-click-model.js';
import { EDL_BIN } from './run-edl.js';

export const MODEL_DEF = fileURLToPath(new URL('../fixtures/sparse-click-model.ts', import.meta.url));
export const VOCABULARY = 400;
export const TRAIN_RECORDS = 1200;
export const EPOCHS = 3;

/** A planted model: each id has a score, an example's label is whether its ids' scores (+ noise) sum above 0. */
export async function writeClicks(file: string, records: number, seed: number): Promise<void> {
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

export interface Run {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  /** The JSON lines of stderr (the master's, the workers' and the shards'). */
  readonly events: Record<string, unknown>[];
}

/** How {@link trainClicks} runs the job. */
export interface TrainClicksOptions {
  /** The directory of `train.tfrecord` and `valid.tfrecord` (written by {@link writeClicks}). */
  readonly dataDir: string;
  readonly checkpointDir: string;
  /** More `edl train` options. */
  readonly extra: readonly string[];
  readonly onEvent?: (event: Record<string, unknown>) => void;
  readonly onStart?: (pid: number) => void;
  /** The job's environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
}

/** How the click-model jobs run: the cpu backend, 2 workers, tasks of 3 minibatches of 20 records. */
export const CLICK_JOB_OPTIONS = [
  '--backend',
  'cpu',
  '--num-workers',
  '2',
  '--minibatch-size',
  '20',
  '--num-minibatches-per-task',
  '3',
] as const;

/** `edl master`'s options of a click-model job: its tasks, and the model definition's optimizer. */
export const CLICK_MASTER_OPTIONS = [
  '--minibatch-size',
  '20',
  '--num-minibatches-per-task',
  '3',
  '--optimizer',
  'adagrad',
  '--learning-rate',
  '0.2',
] as const;

/**
 * `edl master --worker-command` of click-model workers on the cpu backend, reading `origin` given
 * as `dataFlag` (`--training-data`, `--validation-data`).
 */
export function clickWorkerCommand(dataFlag: string, origin: string): string {
  return JSON.stringify([
    process.execPath,
    EDL_BIN,
    'worker',
    '--model-def',
    MODEL_DEF,
    dataFlag,
    origin,
    '--backend',
    'cpu',
    '--minibatch-size',
    '20',
  ]);
}

/** The built `edl train` of the click model on 2 workers for {@link EPOCHS} epochs, with `--stats`. */
export function trainClicks(options: TrainClicksOptions): Promise<Run> {
  const args = [
    EDL_BIN,
    'train',
    '--model-def',
    MODEL_DEF,
    '--training-data',
    path.join(options.dataDir, 'train.tfrecord'),
    '--validation-data',
    path.join(options.dataDir, 'valid.tfrecord'),
    '--checkpoint-dir',
    options.checkpointDir,
    ...CLICK_JOB_OPTIONS,
    '--num-epochs',
    String(EPOCHS),
    '--stats',
    ...options.extra,
  ];
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env === undefined ? {} : { env: options.env }),
    });
    if (child.pid !== undefined) options.onStart?.(child.pid);
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
        options.onEvent?.(event);
      } catch {
        // not an event
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr, events }));
  });
}

export interface Summary {
  state: string;
  records: { done: number; total: number; training: { done: number; total: number } };
  evaluations: { records: number; metrics: Record<string, number> }[];
  workers: { workerId: string; lost?: boolean; lastLoss?: number; records: Record<string, number> }[];
  gradients: { applied: number };
  rollBacks?: { shardIndex: number; cause: string; checkpoint: string | null; recordsRolledBack: number }[];
}

export function summaryOf(run: Run): Summary {
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
  expect(line, run.stdout + run.stderr.slice(-3000)).toBeDefined();
  return JSON.parse(line as string) as Summary;
}

/** The summary of a job that succeeded with every training record applied once per epoch. */
export function succeededOnce(run: Run): Summary {
  expect(run.code, run.stderr.slice(-3000)).toBe(0);
  const summary = summaryOf(run);
  const total = TRAIN_RECORDS * EPOCHS;
  expect(summary.records).toMatchObject({ done: total, total, training: { done: total, total } });
  return summary;
}

/**
 * The roll-back a relaunched shard caused (docs/master.md): the master's log line, checked against
 * the job's accounting. Every record is applied once per epoch in the master's count; the records
 * trained since the cut were trained again, and the workers' counts hold them twice. A roll-back
 * to a checkpoint names it as `checkpoint` matches (a file; an object store's manifest).
 */
export function rolledBack(
  run: Run,
  summary: Summary,
  shardIndex: number,
  to: 'start' | 'checkpoint',
  checkpoint: RegExp = /checkpoint-\d+\.edlckpt$/,
) {
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
      checkpoint: to === 'start' ? null : expect.stringMatching(checkpoint),
      recordsRolledBack,
    }),
  ]);
  return event as Record<string, unknown>;
}

/**
 * SIGKILLs a job whole, `edl train` and the shards and workers that outlive it, at its first
 * checkpoint of a model version at or above `minVersion`: give `onStart` and `onEvent` to
 * {@link trainClicks}. `killedAt()` is the version of that checkpoint.
 */
export function jobKiller(minVersion: number) {
  const children = new Set<number>();
  let killedAt: number | undefined;
  let main: number | undefined;
  const kill = () => {
    for (const pid of [...(main === undefined ? [] : [main]), ...children]) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  };
  return {
    onStart: (pid: number) => {
      main = pid;
    },
    onEvent: (event: Record<string, unknown>) => {
      if (typeof event.pid === 'number' && (event.event === 'listening' || event.msg === 'progress'))
        children.add(event.pid);
      if (
        killedAt === undefined &&
        typeof event.msg === 'string' &&
        event.msg.startsWith('checkpoint written') &&
        (event.modelVersion as number) >= minVersion
      ) {
        killedAt = event.modelVersion as number;
        kill();
      }
    },
    killedAt: () => killedAt,
  };
}

/** The rows of table 'item' that the markers of a checkpoint's shard parts say they hold, over all shards. */
export function itemRowsOf(
  markers: readonly { readonly tables: readonly { readonly name: string; readonly rows: number }[] }[],
): number {
  return markers.reduce((n, m) => n + (m.tables.find((t) => t.name === 'item')?.rows ?? 0), 0);
}

/**
 * Checks that a resumed job's `numShards` shards restored the checkpoint of `version` (RestoreShard,
 * before the master served a task), each its share, together all `savedRows` of its parts.
 */
export function expectShardsRestored(run: Run, version: number, numShards: number, savedRows: number): void {
  const restored = run.events.find(
    (e) => e.msg === `parameter-server shards restored from checkpoint ${version}`,
  );
  expect(restored, run.stderr.slice(-3000)).toBeDefined();
  const rows = String(restored?.rows).split(',').map(Number);
  expect(rows).toHaveLength(numShards);
  expect(rows.every((r) => r > 0)).toBe(true);
  expect(rows.reduce((a, b) => a + b, 0)).toBe(savedRows);
}

/** What each shard said when it stopped: its tables' rows and pushes. */
export function shardsAtStop(run: Run): Map<number, { name: string; rows: number; pushes: number }[]> {
  const out = new Map<number, { name: string; rows: number; pushes: number }[]>();
  for (const e of run.events)
    if (e.event === 'stopped')
      out.set(e.shardIndex as number, e.tables as { name: string; rows: number; pushes: number }[]);
  return out;
}

/**
 * `edl ps` shards started from a checkpoint's shard parts (a directory, or an object-store prefix
 * with `env` giving the store's settings); resolves once all listen.
 */
export async function restoredShards(
  numShards: number,
  checkpointDir: string,
  version: number,
  env: NodeJS.ProcessEnv = process.env,
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
      { env: { ...env, EDL_JOB_TOKEN: token }, stdio: ['ignore', 'pipe', 'inherit'] },
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

/** The final evaluation of a training job: what an evaluation of its last checkpoint must report. */
export type Evaluation = Summary['evaluations'][number];

/** A click model trained by {@link trainedClickCheckpoint}: its final evaluation and last checkpoint. */
export interface TrainedClickCheckpoint {
  readonly checkpointDir: string;
  readonly trained: Evaluation;
  /** The committed checkpoint the job ended with, and the rows of table 'item' its parts hold. */
  readonly checkpoint: { readonly path: string; readonly version: number; readonly rows: number };
}

/**
 * Writes `train.tfrecord` and `valid.tfrecord` (400 records) into `dir` and trains the click model
 * on them with `edl train --num-ps 2 --checkpoint-dir <dir>/ckpt`.
 */
export async function trainedClickCheckpoint(dir: string): Promise<TrainedClickCheckpoint> {
  const checkpointDir = path.join(dir, 'ckpt');
  await writeClicks(path.join(dir, 'train.tfrecord'), TRAIN_RECORDS, 1);
  await writeClicks(path.join(dir, 'valid.tfrecord'), 400, 2);
  const run = await trainClicks({ dataDir: dir, checkpointDir, extra: ['--num-ps', '2'] });
  const summary = succeededOnce(run);
  const trained = summary.evaluations.at(-1) as Evaluation;
  expect(trained.records).toBe(400);
  const found = await findCheckpoint(checkpointDir);
  if (found === undefined) throw new Error(`no checkpoint in ${checkpointDir}`);
  expect(found.checkpoint.parameterServers).toEqual({ numShards: 2 });
  const version = found.checkpoint.store.version;
  const rows = itemRowsOf(readShardMarkers(checkpointDir, version));
  expect(rows).toBeGreaterThan(0);
  return { checkpointDir, trained, checkpoint: { path: found.path, version, rows } };
}

/** Checks that an evaluation job's one round has the metrics of the training job's final one. */
export function expectTrainedMetrics(evaluations: readonly Evaluation[], trained: Evaluation): void {
  expect(evaluations).toHaveLength(1);
  const evaluation = evaluations[0] as Evaluation;
  expect(evaluation.records).toBe(400);
  expect(Object.keys(evaluation.metrics).sort()).toEqual(Object.keys(trained.metrics).sort());
  for (const [name, value] of Object.entries(trained.metrics))
    expect(evaluation.metrics[name], name).toBeCloseTo(value, 4);
}

/**
 * Checks, from the shards' events, that `numShards` shards restored the checkpoint's parts (the
 * version of `checkpoint`, all its rows between them) and stopped holding just those: reads
 * create no row.
 */
export function expectShardsRestoredFromParts(
  events: readonly Record<string, unknown>[],
  numShards: number,
  checkpoint: TrainedClickCheckpoint['checkpoint'],
): void {
  const restored = events.filter((e) => e.event === 'restored');
  expect(restored.map((e) => e.shardIndex).sort()).toEqual([...Array(numShards).keys()]);
  for (const event of restored) expect(event.version).toBe(checkpoint.version);
  const rows = restored.map((e) => (e.tables as { name: string; rows: number }[])[0]?.rows ?? 0);
  expect(rows.every((r) => r > 0)).toBe(true);
  expect(rows.reduce((a, b) => a + b, 0)).toBe(checkpoint.rows);
  const stopped = events.filter((e) => e.event === 'stopped');
  expect(stopped).toHaveLength(numShards);
  for (const event of stopped) {
    const index = restored.findIndex((r) => r.shardIndex === event.shardIndex);
    expect((event.tables as { rows: number }[])[0]?.rows).toBe(rows[index]);
  }
}

/** Uploads the shard parts of the checkpoint of `version` in `checkpointDir` under `prefix`, as the shards write them. */
export async function uploadShardParts(
  checkpointDir: string,
  version: number,
  prefix: string,
): Promise<void> {
  const parts = shardCheckpointDirName(version);
  for (const name of await readdir(path.join(checkpointDir, parts)))
    await putObject(`${prefix}${parts}/${name}`, await readFile(path.join(checkpointDir, parts, name)));
}

/**
 * A fresh temporary directory (its name beginning with `prefix`) with the click log of
 * {@link writeClicks}: `train.tfrecord` of TRAIN_RECORDS records and `valid.tfrecord` of 400.
 */
export async function clickDataDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(tmpdir(), prefix));
  await writeClicks(path.join(dir, 'train.tfrecord'), TRAIN_RECORDS, 1);
  await writeClicks(path.join(dir, 'valid.tfrecord'), 400, 2);
  return dir;
}

/**
 * A job's event handler that SIGKILLs parameter-server shard `shardIndex` once the job committed
 * its first checkpoint; `killed()` is the pid it killed, if it did.
 */
export function shardKillerAfterCheckpoint(shardIndex: number): {
  readonly onEvent: (event: Record<string, unknown>) => void;
  readonly killed: () => number | undefined;
} {
  let killed: number | undefined;
  let committed = false;
  const listening: Record<string, unknown>[] = [];
  return {
    onEvent: (event) => {
      if (event.event === 'listening') listening.push(event);
      if (typeof event.msg === 'string' && event.msg.startsWith('checkpoint written')) committed = true;
      const shard = listening.find((e) => e.shardIndex === shardIndex);
      if (killed === undefined && committed && typeof shard?.pid === 'number') {
        killed = shard.pid;
        process.kill(shard.pid, 'SIGKILL');
      }
    },
    killed: () => killed,
  };
}
