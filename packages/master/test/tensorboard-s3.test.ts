/**
 * `--tensorboard-dir s3://...`: the TensorBoard writer rolls whole events objects into a real
 * s3rver process (S3 has no append), each a TFRecord events file that starts with its own
 * file-version event, named so that TensorBoard reads them in order.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TFRecordReader } from '@edl/recordio';
import { configureS3, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { JobStatusTracker } from '../src/job-status.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';
import { TensorBoardWriter } from '../src/tensorboard.js';

let s3: S3rverProcess;
let source: S3ByteSource;
const scratch = mkdtempSync(join(tmpdir(), 'edl-tb-s3-'));

beforeAll(async () => {
  s3 = await startS3rver();
  await s3.createBucket('events');
  configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
}, 60_000);
afterAll(async () => {
  configureS3({});
  await source?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

/** The records of the events object at `location`, hex, after each event's wall_time. */
async function eventsOf(location: string): Promise<string[]> {
  const stat = await source.stat(location);
  const file = join(scratch, location.split('/').at(-1) as string);
  writeFileSync(file, await source.readRange(stat, 0, stat.size));
  const reader = await TFRecordReader.open(file);
  const records: string[] = [];
  for await (const record of reader.records()) records.push(Buffer.from(record).toString('hex').slice(18));
  reader.close();
  return records;
}

/** A training master and its status tracker, for a writer to follow. */
async function newJob(): Promise<{ master: Master; tracker: JobStatusTracker }> {
  const master = await Master.create({
    jobType: 'training',
    trainingShards: [{ name: 's', start: 0, count: 10 }],
    logger: silentLogger,
  });
  return { master, tracker: new JobStatusTracker(master, { jobId: 't' }) };
}

const FILE_VERSION = `1a0d${Buffer.from('brain.Event:2').toString('hex')}`;

describe('TensorBoardWriter on S3', () => {
  it('rolls the events into whole objects, in name order, each readable by itself', async () => {
    const { master, tracker } = await newJob();
    // A roll at every flush (rollMs 0), and no timer flush during the test.
    const writer = new TensorBoardWriter('s3://events/run-1/', master, tracker, 3_600_000, 0);
    expect(writer.path).toMatch(/^s3:\/\/events\/run-1\/events\.out\.tfevents\.\d+\./);
    const stats = { backend: 'cpu', steps: 3, records: { training: 30, evaluation: 0, prediction: 0 } };
    master.heartbeat('worker-0', {
      ...stats,
      meanLoss: 0.75,
      lossSteps: 3,
      elapsedSeconds: 1,
      timerSeconds: {},
    });
    writer.flush();
    writer.onEvaluation({ round: 1, modelVersion: 4, records: 10, metrics: { accuracy: 0.875 }, time: '' });
    await writer.close();
    tracker.close();
    const names = (await source.list('s3://events/run-1/')).map((object) => object.location);
    expect(names).toEqual([`${writer.path}.000001`, `${writer.path}.000002`]);
    expect(await eventsOf(names[0] as string)).toEqual([FILE_VERSION, `2a0d0a0b0a046c6f737315${'0000403f'}`]);
    expect(await eventsOf(names[1] as string)).toEqual([
      FILE_VERSION,
      `1004${'2a16'}${'0a14'}${'0a0d'}${Buffer.from('eval/accuracy').toString('hex')}15${'0000603f'}`,
    ]);
  }, 60_000);

  it('keeps the events of a roll period together and writes nothing for an idle job', async () => {
    const { master, tracker } = await newJob();
    const idle = new TensorBoardWriter('s3://events/idle', master, tracker, 3_600_000, 0);
    await idle.close();
    expect(await source.list('s3://events/idle/')).toEqual([]);
    // A long roll period: flushes do not upload; close writes the one object.
    const writer = new TensorBoardWriter('s3://events/run-2', master, tracker, 3_600_000, 3_600_000);
    const stats = { backend: 'cpu', steps: 1, records: { training: 10, evaluation: 0, prediction: 0 } };
    for (const meanLoss of [0.5, 0.25]) {
      master.heartbeat('worker-0', { ...stats, meanLoss, lossSteps: 1, elapsedSeconds: 1, timerSeconds: {} });
      writer.flush();
    }
    expect(await source.list('s3://events/run-2/')).toEqual([]);
    await writer.close();
    tracker.close();
    const names = (await source.list('s3://events/run-2/')).map((object) => object.location);
    expect(names).toEqual([`${writer.path}.000001`]);
    expect(await eventsOf(names[0] as string)).toEqual([
      FILE_VERSION,
      `2a0d0a0b0a046c6f737315${'0000003f'}`,
      `2a0d0a0b0a046c6f737315${'0000803e'}`,
    ]);
  }, 60_000);
});
