/**
 * Training from S3 end to end (issue 24, "Prove that"), against a real s3rver process: the built
 * `edl train` on the MNIST demo data in s3rver with its checkpoints in s3rver, a master SIGKILLed
 * after its first checkpoint and a new `edl train` resuming from that checkpoint; and every record
 * trained exactly once per epoch while workers reading from S3 are SIGKILLed mid-task.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { createDataReader } from '@edl/data';
import { type LocalInstanceManager, type MasterHandle, silentLogger, startMaster } from '@edl/master';
import { writeMnistRecordIO } from '@edl/model-zoo';
import { RecordIOWriter } from '@edl/recordio';
import { configureS3, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simWorker, sleep, waitFor } from '../../master/test/helpers.js';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { EDL_BIN } from './helpers/run-edl.js';
import { s3rverEnv } from './helpers/s3rver-env.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-s3-train-'));
/** The worker processes the test saw, killed at the end in case a SIGKILLed master orphaned one. */
const workerPids = new Set<number>();

let s3: S3rverProcess;
/** Reads what the jobs wrote, straight from s3rver. */
let source: S3ByteSource;
/** The environment of the `edl` and worker processes: the s3rver account, as the AWS SDK reads it. */
let s3Env: NodeJS.ProcessEnv;

/** Uploads every file under `dir` to `bucket` under `prefix`, keeping the relative paths. */
async function upload(dir: string, bucket: string, prefix: string): Promise<void> {
  for (const entry of readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = join(entry.parentPath, entry.name);
    await s3.put(bucket, `${prefix}${relative(dir, file).split('\\').join('/')}`, readFileSync(file));
  }
}

/** The object names under `prefix` in s3rver. */
async function objectsUnder(prefix: string): Promise<string[]> {
  return (await source.list(prefix).catch(() => [])).map((object) => object.location);
}

interface EdlProcess {
  readonly child: ChildProcess;
  /** What it wrote to standard error so far. */
  stderr(): string;
  readonly done: Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>;
}

/** Starts the built `edl` with the s3rver account in its environment; notes the worker pids it logs. */
function startEdl(args: readonly string[]): EdlProcess {
  const child = spawn(process.execPath, [EDL_BIN, ...args], {
    cwd: scratch,
    env: s3Env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    const text = chunk.toString();
    stderr += text;
    for (const match of text.matchAll(/"pid":(\d+)/g)) workerPids.add(Number(match[1]));
  });
  const done = new Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
  return { child, done, stderr: () => stderr };
}

beforeAll(async () => {
  s3 = await startS3rver();
  s3Env = s3rverEnv(s3.endpoint);
  await s3.createBucket('bucket');
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
}, 60_000);
afterAll(async () => {
  for (const pid of workerPids) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // Already gone, as it should be.
    }
  }
  configureS3({});
  await source?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('edl train --training-data s3://... --checkpoint-dir s3://...', () => {
  it('trains the MNIST demo data from S3, resumes from the S3 checkpoint after a master SIGKILL, and exports there', async () => {
    const data = join(scratch, 'mnist');
    await writeMnistRecordIO({ dir: data, testRecords: 200, trainRecords: 1024, trainFiles: 4, seed: 1 });
    await upload(data, 'bucket', 'mnist/');
    expect((await objectsUnder('s3://bucket/mnist/train/')).length).toBeGreaterThanOrEqual(4);

    const job = [
      'train',
      '--model-def',
      'mnist',
      '--training-data',
      's3://bucket/mnist/train/',
      '--validation-data',
      's3://bucket/mnist/test/',
      '--checkpoint-dir',
      's3://bucket/ckpt/',
      '--s3-endpoint',
      s3.endpoint,
      '--backend',
      'wasm',
      '--num-workers',
      '2',
      '--minibatch-size',
      '32',
      '--num-minibatches-per-task',
      '4',
      '--num-epochs',
      '2',
      '--checkpoint-steps',
      '8',
      '--stats',
    ];

    // The first master is SIGKILLed once its first checkpoint is committed (its manifest is written last).
    const first = startEdl(job);
    let exited = false;
    void first.done.then(() => {
      exited = true;
    });
    let manifests: string[] = [];
    for (let waited = 0; !exited && waited < 150_000; waited += 200) {
      manifests = (await objectsUnder('s3://bucket/ckpt/')).filter((name) => name.endsWith('.manifest.json'));
      if (manifests.length > 0) break;
      await sleep(200);
    }
    expect(manifests.length, first.stderr().slice(-3000)).toBeGreaterThan(0);
    first.child.kill('SIGKILL');
    const killed = await first.done;
    expect(killed.signal).toBe('SIGKILL');
    const versionAtKill = Math.max(
      ...(await objectsUnder('s3://bucket/ckpt/'))
        .map((name) => /checkpoint-(\d+)\.manifest\.json$/.exec(name)?.[1])
        .filter((version) => version !== undefined)
        .map(Number),
    );
    expect(versionAtKill).toBeGreaterThan(0);
    // The job did not finish: no model was exported before the kill.
    expect(await objectsUnder('s3://bucket/ckpt/model/')).toEqual([]);

    // A new `edl train` with the same --checkpoint-dir finds that checkpoint in S3 and goes on from it.
    const second = await startEdl(job).done;
    expect(second.code, second.stderr.slice(-3000)).toBe(0);
    // It names the last checkpoint committed before the kill, and how far that job had got.
    const resumed = second.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; recordsDone?: number })
      .find((event) => event.msg?.startsWith('resumed from checkpoint'));
    expect(resumed?.msg, second.stderr.slice(0, 3000)).toBe(
      `resumed from checkpoint s3://bucket/ckpt/checkpoint-${String(versionAtKill).padStart(12, '0')}.manifest.json`,
    );
    const recordsDoneAtResume = resumed?.recordsDone ?? 0;
    expect(recordsDoneAtResume).toBeGreaterThan(0);
    const line = second.stdout.split('\n').find((l) => l.startsWith('{"state"'));
    expect(line, second.stdout).toBeDefined();
    const summary = JSON.parse(line as string) as {
      state: string;
      modelVersion: number;
      records: { training: { done: number; total: number } };
      gradients: { applied: number };
      evaluations: Array<{ records: number; metrics: Record<string, number> }>;
      workers: Array<{ records: Record<string, number> }>;
    };
    expect(summary.state).toBe('succeeded');
    expect(summary.records.training).toEqual({ done: 2048, total: 2048 });
    // The model version goes on from the checkpoint's, and the new workers trained only what the
    // checkpoint had not: each of the 2 x 1,024 records once over the two jobs.
    expect(summary.modelVersion).toBe(versionAtKill + summary.gradients.applied);
    expect(summary.modelVersion).toBe(2048 / 32);
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(
      2048 - recordsDoneAtResume,
    );
    // Real handwriting read from S3: well above chance (0.1), reported on the 200 held-out digits.
    const accuracy = summary.evaluations.at(-1)?.metrics.accuracy as number;
    expect(summary.evaluations.at(-1)?.records).toBe(200);
    expect(accuracy).toBeGreaterThan(0.5);
    expect(second.stdout).toContain(
      `evaluation round 1 (model v64, 200 records): accuracy=${accuracy.toFixed(4)}`,
    );
    expect(second.stdout).toContain(
      'model exported in the TensorFlow.js format: s3://bucket/ckpt/model/model.json',
    );
    expect(await objectsUnder('s3://bucket/ckpt/model/')).toEqual([
      's3://bucket/ckpt/model/model.json',
      's3://bucket/ckpt/model/weights.bin',
    ]);
    const committed = (await objectsUnder('s3://bucket/ckpt/')).filter((name) =>
      name.endsWith('.manifest.json'),
    );
    expect(committed).toContain(
      `s3://bucket/ckpt/checkpoint-${String(summary.modelVersion).padStart(12, '0')}.manifest.json`,
    );
  }, 420_000);
});

describe('exactly once per epoch, reading from S3', () => {
  const RECORDS = 600;
  const EPOCHS = 2;

  it('trains every record of every epoch once while workers reading s3:// are SIGKILLed mid-task', async () => {
    // Records whose text is their id, in two RecordIO objects, read by the workers from s3rver.
    for (const [name, from, to] of [
      ['ids-0.rio', 0, 330],
      ['ids-1.rio', 330, RECORDS],
    ] as const) {
      const file = join(scratch, name);
      const writer = RecordIOWriter.createSync(file, { maxChunkBytes: 512 });
      for (let id = from; id < to; id++) writer.write(String(id));
      writer.close();
      await s3.put('bucket', `ids/${name}`, readFileSync(file));
    }
    configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
    const reader = await createDataReader('s3://bucket/ids/');
    // The workers open these objects in s3rver (a reader description holds locations, not data).
    expect(reader.describe().params).toMatchObject({ dataDir: 's3://bucket/ids/' });
    const shards = await reader.createShards();
    expect(shards.map((shard) => [shard.name, shard.count])).toEqual([
      ['s3://bucket/ids/ids-0.rio', 330],
      ['s3://bucket/ids/ids-1.rio', RECORDS - 330],
    ]);

    // For every accepted gradient: the ids it carries, listed under the epoch the master is in.
    const applied = new Map<number, number[]>();
    let handle: MasterHandle | undefined;
    const output: string[] = [];
    handle = await startMaster({
      jobType: 'training',
      trainingReader: reader,
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      numEpochs: EPOCHS,
      shuffle: true,
      seed: 7,
      leaseMs: 3_000,
      maxTaskFailures: 20,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      onGradientApplied: (gradient) => {
        const epoch = handle?.master.taskManager.status().epoch ?? 0;
        const ids = applied.get(epoch) ?? [];
        applied.set(epoch, ids);
        gradient.gradients[0]?.values.forEach((value, id) => {
          if (value !== 0) ids.push(id);
        });
      },
      workers: {
        args: [simWorker],
        numWorkers: 3,
        maxRestarts: 20,
        env: {
          ...s3Env,
          SIM_RECORDS: String(RECORDS),
          SIM_MINIBATCH: '10',
          SIM_STEP_DELAY_MS: '8',
          SIM_TRANSPORT: 'stream',
          SIM_READER: JSON.stringify(reader.describe()),
        },
        onOutput: (id, line) => output.push(`${id}: ${line}`),
      },
    });
    const instances = handle.instanceManager as LocalInstanceManager;

    // Each kill hits a worker holding a half-done task, so it dies between ranged reads from S3.
    let kills = 0;
    for (let i = 0; i < 5; i++) {
      let pid: number | undefined;
      await waitFor(() => {
        const busy = handle?.master.taskManager
          .inFlight()
          .find((t) => t.kind === 'training' && t.progress > t.start && t.progress < t.end);
        pid = busy && instances.workers().find((w) => w.workerId === busy.workerId)?.pid;
        return pid !== undefined || handle?.master.taskManager.finished === true;
      }, 'a worker in mid-task');
      if (pid === undefined) break;
      process.kill(pid, 'SIGKILL');
      kills++;
      await sleep(150);
    }

    const result = await handle.wait();
    expect(result.error?.message, output.slice(0, 20).join('\n')).toBeUndefined();
    expect(result.state).toBe('succeeded');
    expect(kills).toBeGreaterThanOrEqual(3);
    // Per epoch, the ids applied (repeats kept) are each record's id exactly once.
    const everyId = Array.from({ length: RECORDS }, (_, id) => id);
    expect([...applied.keys()].sort()).toEqual(Array.from({ length: EPOCHS }, (_, epoch) => epoch));
    for (const ids of applied.values()) expect(ids.sort((a, b) => a - b)).toEqual(everyId);
    // counts[id] is the number of times record id was applied: EPOCHS for every record.
    expect(Array.from(new Set(handle.master.store.getModel().variables[0]?.values))).toEqual([EPOCHS]);
    await reader.close?.();
  }, 180_000);
});
