/**
 * The job outputs in S3, through the built `edl` against a real s3rver process: `edl train
 * --tensorboard-dir s3://...` (rolled events objects) and `edl predict --output s3://...` (the merged
 * predictions, committed whole).
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateCensusCsv } from '@edl/model-zoo';
import { TFRecordReader } from '@edl/recordio';
import { type ObjectStat, S3ByteSource } from '@edl/storage';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { EDL_BIN, type EdlRun, runEdl } from './helpers/run-edl.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-cli-s3-outputs-'));
const common = ['--model-def', 'census', '--data-reader-params', '{"header":true,"recordsPerShard":100}'];
common.push('--backend', 'cpu', '--num-workers', '2');

/** Runs the built `edl` against s3rver (its account is in this process's environment, see beforeAll). */
function run(args: string[]): Promise<EdlRun> {
  return runEdl([...args, '--s3-endpoint', s3.endpoint], scratch);
}

/** The s3rver account for the `edl` processes, and what the variables were before. */
const S3_ENV = {
  AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
  AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
  AWS_REGION: 'us-east-1',
};
const savedEnv = Object.fromEntries(Object.keys(S3_ENV).map((name) => [name, process.env[name]]));

let s3: S3rverProcess;
let source: S3ByteSource;
let train: string;
let valid: string;

async function bytesOf(object: ObjectStat): Promise<Buffer> {
  return Buffer.from(await source.readRange(object, 0, object.size));
}

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm run build:ts' first`);
  s3 = await startS3rver();
  await s3.createBucket('outputs');
  Object.assign(process.env, S3_ENV);
  source = new S3ByteSource({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
  train = await generateCensusCsv({ file: join(scratch, 'train.csv'), rows: 600, seed: 1 });
  valid = await generateCensusCsv({ file: join(scratch, 'valid.csv'), rows: 200, seed: 2 });
}, 60_000);
afterAll(async () => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await source?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('job outputs in S3', () => {
  it('edl train --tensorboard-dir s3:// leaves an events object; edl predict --output s3:// the predictions', async () => {
    const ckpt = join(scratch, 'ckpt');
    const trained = await run([
      'train',
      ...common,
      '--training-data',
      train,
      '--validation-data',
      valid,
      '--num-epochs',
      '2',
      '--checkpoint-dir',
      ckpt,
      '--tensorboard-dir',
      's3://outputs/tb/census/',
    ]);
    expect(trained.code, trained.stderr).toBe(0);
    const events = await source.list('s3://outputs/tb/census/');
    // A short job: the one roll at the end of the job.
    expect(events.map((object) => object.location)).toEqual([
      expect.stringMatching(/^s3:\/\/outputs\/tb\/census\/events\.out\.tfevents\.\d+\.[^/]+\.\d+\.000001$/),
    ]);
    const eventsFile = join(scratch, 'events.tfevents');
    writeFileSync(eventsFile, await bytesOf(events[0] as ObjectStat));
    const reader = await TFRecordReader.open(eventsFile);
    const tags = new Set<string>();
    let first: string | undefined;
    for await (const record of reader.records()) {
      const text = Buffer.from(record).toString('latin1');
      first ??= text;
      for (const tag of ['loss', 'records_per_second', 'eval/accuracy'])
        if (text.includes(tag)) tags.add(tag);
    }
    reader.close();
    expect(first).toContain('brain.Event:2');
    // The evaluation at the end of training always lands; loss and throughput scalars need a
    // heartbeat or a sample during the job, which a job this short may finish before.
    expect(tags.has('eval/accuracy')).toBe(true);
    expect(events.length).toBe(1);

    const predicted = await run([
      'predict',
      ...common,
      '--prediction-data',
      valid,
      '--model-checkpoint',
      ckpt,
      '--output',
      's3://outputs/predictions/census.jsonl',
    ]);
    expect(predicted.code, predicted.stderr).toBe(0);
    expect(predicted.stdout).toContain('predictions written to s3://outputs/predictions/census.jsonl');
    expect(existsSync(join(scratch, 's3:'))).toBe(false);
    const [object] = await source.list('s3://outputs/predictions/census.jsonl');
    const lines = (await bytesOf(object as ObjectStat))
      .toString('utf8')
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { shard: string; record: number; output: number[] });
    expect(lines.map((line) => line.record)).toEqual(Array.from({ length: 200 }, (_, i) => i));
    expect(lines.every((line) => line.shard.includes('valid.csv') && line.output.length === 1)).toBe(true);
    expect(lines.every((line) => (line.output[0] as number) > 0 && (line.output[0] as number) < 1)).toBe(
      true,
    );
  }, 180_000);
});
