/**
 * Read-ahead across tasks from S3 (issue 24), in real `edl worker` processes against a real master
 * and a real s3rver process: a worker reading a directory of small TFRecord objects holds several
 * tasks ahead (its reader's read-ahead budget has room for many such files, up to the TaskFeed's
 * cap), every record is trained exactly once per epoch, and a worker SIGKILLed while it holds
 * several tasks gives every one of them back, each trained once by whoever takes it.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDataReader } from '@edl/data';
import { type LocalInstanceManager, type MasterHandle, silentLogger, startMaster } from '@edl/master';
import { TFRecordWriter } from '@edl/recordio';
import { configureS3 } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { appliedIdsPerEpoch, expectEachIdOncePerEpoch } from './helpers/applied-ids.js';
import { EDL_BIN } from './helpers/run-edl.js';

const model = fileURLToPath(new URL('./fixtures/tfrecord-id-model.mjs', import.meta.url));
/** 24 objects of 20 records: one task each (minibatches of 10, 2 per task). */
const FILES = 24;
const PER_FILE = 20;
const RECORDS = FILES * PER_FILE;
const EPOCHS = 2;

const scratch = mkdtempSync(join(tmpdir(), 'edl-s3-ahead-'));
/** The index cache the master's reader fills and the workers read (as local workers share it). */
const indexCacheDir = join(scratch, 'index-cache');
let s3: S3rverProcess;

beforeAll(async () => {
  s3 = await startS3rver();
  await s3.createBucket('bucket');
  // Records whose bytes are the decimal text of their id, file f holding ids 20f..20f+19.
  for (let file = 0; file < FILES; file++) {
    const path = join(scratch, `part-${String(file).padStart(3, '0')}.tfrecord`);
    const writer = TFRecordWriter.create(path);
    for (let id = file * PER_FILE; id < (file + 1) * PER_FILE; id++) writer.write(String(id));
    await writer.close();
    await s3.put('bucket', `ahead/part-${String(file).padStart(3, '0')}.tfrecord`, readFileSync(path));
  }
  configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS, forcePathStyle: true });
}, 60_000);

afterAll(async () => {
  configureS3({});
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('edl worker reading s3:// with tasks held ahead', () => {
  it('holds several tasks ahead, trains each record once per epoch, and gives back every held task of a SIGKILLed worker', async () => {
    const reader = await createDataReader('s3://bucket/ahead/', { remote: { indexCacheDir } });
    const shards = await reader.createShards();
    expect(shards.map((shard) => shard.count)).toEqual(Array(FILES).fill(PER_FILE));

    // For every accepted gradient: the ids it carries, listed under the epoch the master is in.
    const { applied, onGradientApplied } = appliedIdsPerEpoch(
      () => handle?.master.taskManager.status().epoch ?? 0,
    );
    const output: string[] = [];
    let handle: MasterHandle | undefined;
    handle = await startMaster({
      jobType: 'training',
      trainingReader: reader,
      minibatchSize: 10,
      numMinibatchesPerTask: 2,
      numEpochs: EPOCHS,
      leaseMs: 5_000,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      onGradientApplied,
      workers: {
        args: [
          EDL_BIN,
          'worker',
          '--model-def',
          model,
          '--training-data',
          's3://bucket/ahead/',
          '--minibatch-size',
          '10',
          '--backend',
          'cpu',
          '--s3-endpoint',
          s3.endpoint,
        ],
        numWorkers: 2,
        maxRestarts: 4,
        env: {
          AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
          AWS_REGION: 'us-east-1',
          EDL_INDEX_CACHE_DIR: indexCacheDir,
          IDENTITY_RECORDS: String(RECORDS),
        },
        onOutput: (id, line) => output.push(`${id}: ${line}`),
      },
    });
    const tasks = handle.master.taskManager;
    const instances = handle.instanceManager as LocalInstanceManager;

    // Watches what each worker holds, all job long; SIGKILLs the first worker seen mid-task with
    // 6+ tasks held: more than a worker holds with one task read ahead (the one consumed, the one
    // read, the one ahead), so only a deeper read-ahead is killed so.
    let mostHeld = 0;
    let heldAtKill: number[] = [];
    let killed: number | undefined;
    const watch = setInterval(() => {
      for (const { workerId, pid } of instances.workers()) {
        const held = tasks.tasksOf(workerId);
        mostHeld = Math.max(mostHeld, held.length);
        const first = tasks.inFlight().find((task) => task.taskId === held[0]);
        if (killed === undefined && held.length >= 6 && first !== undefined && first.progress > first.start) {
          heldAtKill = held;
          killed = pid;
          process.kill(pid, 'SIGKILL');
        }
      }
    }, 5);
    const result = await handle.wait().finally(() => clearInterval(watch));
    expect(result.error?.message, output.slice(-20).join('\n')).toBeUndefined();
    expect(result.state).toBe('succeeded');
    // Tasks of one small file each: the reader's budget (64 MiB) had room for many, so a worker
    // held up to the TaskFeed's cap of 16 ahead (bounded here by the 24 tasks of an epoch).
    expect(mostHeld).toBeGreaterThanOrEqual(6);
    expect(killed, output.slice(-20).join('\n')).toBeDefined();
    expect(heldAtKill.length).toBeGreaterThanOrEqual(6);
    // Per epoch, the ids applied (repeats kept) are each record's id exactly once.
    expectEachIdOncePerEpoch(applied, RECORDS, EPOCHS);
    // Weight i is minus the times record i was in an applied gradient: EPOCHS for every record.
    const weights = handle.master.store.getModel().variables[0]?.values;
    expect(Array.from(new Set(Array.from(weights ?? [], (w) => -w)))).toEqual([EPOCHS]);
    await reader.close?.();
  }, 240_000);
});
