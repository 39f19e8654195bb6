/**
 * `edl evaluate` and `edl predict --model-checkpoint` of a model trained with `edl train --num-ps 2`
 * (issue 25): the job's shards start from the checkpoint's shard parts (as many as wrote them, or
 * --num-ps re-sharding them), so the metrics are the training job's final evaluation and the
 * predictions those of the model `edl export` assembled; the same from a copy of the checkpoint in
 * S3 (a real s3rver process). A checkpoint without parts, or whose parts no checkpoint commits, is
 * refused naming it. Needs `pnpm build`.
 */
import { existsSync } from 'node:fs';
import { cp, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SeededRandom } from '@edl/common';
import { findCheckpoint, writeCheckpoint } from '@edl/master';
import { shardCheckpointDirName } from '@edl/ps';
import { TFRecordWriter } from '@edl/recordio';
import { selectBackend, tf, tfl } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DENSE_FEATURES, encodeClick, IDS_PER_EXAMPLE } from './fixtures/sparse-click-model.js';
import {
  CLICK_JOB_OPTIONS,
  expectShardsRestoredFromParts,
  expectTrainedMetrics as expectTrainedMetricsOf,
  MODEL_DEF,
  type Summary,
  trainedClickCheckpoint,
  uploadShardParts,
  VOCABULARY,
} from './helpers/ps-job.js';
import { EDL_BIN, runEdl } from './helpers/run-edl.js';
import { bucketS3rverForSuite } from './helpers/s3rver-env.js';

const PREDICT_RECORDS = 120;
let dir: string;
let checkpointDir: string;
/** The training job's final evaluation. */
let trained: Summary['evaluations'][number];
/** The committed checkpoint the training job ended with. */
let checkpoint: { path: string; version: number; rows: number };
/** The prediction records' features, in record order. */
const predictIds: number[] = [];
const predictX: number[] = [];

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-ps-evaluate-'));
  // Every id of the vocabulary, uniformly: rare ids, and ids no training example had.
  const random = new SeededRandom(5);
  const writer = TFRecordWriter.create(path.join(dir, 'predict.tfrecord'));
  for (let i = 0; i < PREDICT_RECORDS; i++) {
    const ids = Array.from({ length: IDS_PER_EXAMPLE }, () => Math.floor(VOCABULARY * random.next()));
    const x = [random.normal(), random.normal()];
    predictIds.push(...ids);
    predictX.push(...x);
    writer.write(encodeClick(ids, x, 0));
  }
  await writer.close();
  ({ checkpointDir, trained, checkpoint } = await trainedClickCheckpoint(dir));
}, 300_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface JobRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly events: Record<string, unknown>[];
}

/**
 * `edl evaluate | predict` of the click model on 2 workers, with `--stats`, of `--model-checkpoint
 * checkpoint`, or of `checkpoint`'s options as they are.
 */
async function job(
  kind: 'evaluate' | 'predict',
  checkpoint: string | readonly string[],
  extra: readonly string[] = [],
  env?: NodeJS.ProcessEnv,
  onStderrLine?: (line: string) => void,
): Promise<JobRun> {
  const data =
    kind === 'evaluate'
      ? ['--validation-data', path.join(dir, 'valid.tfrecord')]
      : ['--prediction-data', path.join(dir, 'predict.tfrecord')];
  const run = await runEdl(
    [
      kind,
      '--model-def',
      MODEL_DEF,
      ...data,
      ...(typeof checkpoint === 'string' ? ['--model-checkpoint', checkpoint] : checkpoint),
      ...CLICK_JOB_OPTIONS,
      '--stats',
      ...extra,
    ],
    undefined,
    onStderrLine,
    env,
  );
  const events = run.stderr
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  return { ...run, events };
}

/** Checks that `numShards` shards restored the committed checkpoint's parts, all its rows. */
function expectRestored(run: JobRun, numShards: number): void {
  expect(run.code, run.stderr.slice(-3000)).toBe(0);
  expectShardsRestoredFromParts(run.events, numShards, checkpoint);
}

/** Checks that an evaluation job's metrics are the training job's final evaluation. */
function expectTrainedMetrics(run: JobRun): void {
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
  expect(line, run.stdout).toBeDefined();
  expectTrainedMetricsOf((JSON.parse(line as string) as Summary).evaluations, trained);
}

describe('edl evaluate --model-checkpoint of a model trained with --num-ps 2', () => {
  it("restores the checkpoint's 2 shards without --num-ps and reports the training job's final metrics", async () => {
    const run = await job('evaluate', checkpointDir);
    expectRestored(run, 2);
    expect(run.stderr).toContain(
      `parameter-server shards started from the shard parts of ${checkpoint.path}`,
    );
    expectTrainedMetrics(run);
  }, 120_000);

  it('relaunches a shard SIGKILLed mid-job from the same checkpoint, without rolling the shards back', async () => {
    const pids = new Map<number, number>();
    let killed: number | undefined;
    const run = await job('evaluate', checkpointDir, [], undefined, (line) => {
      if (!line.startsWith('{')) return;
      const event = JSON.parse(line) as Record<string, unknown>;
      if (event.event === 'listening') pids.set(event.shardIndex as number, event.pid as number);
      // A worker set up its shard steps (rows, and dense variables on the shards): its first task pulls next.
      if (killed === undefined && (event.msg === 'embedding.steps' || event.msg === 'dense.on_shards')) {
        killed = pids.get(1);
        if (killed !== undefined) process.kill(killed, 'SIGKILL');
      }
    });
    expect(killed, run.stderr.slice(-3000)).toBeDefined();
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stderr).toMatch(
      /warning: Parameter-server shard 1 \(127\.0\.0\.1:\d+\) exited with signal SIGKILL: relaunched on the same address\./,
    );
    expect(run.stderr).toContain(
      `Its embedding rows restart from the checkpoint of model version ${checkpoint.version} in ${checkpointDir}`,
    );
    // The relaunched shard restored its rows as it started; nothing emptied the shards.
    const restored = run.events.filter((e) => e.event === 'restored' && e.shardIndex === 1);
    expect(restored).toHaveLength(2);
    expect(run.events.some((e) => typeof e.msg === 'string' && e.msg.startsWith('job rolled back'))).toBe(
      false,
    );
    expectTrainedMetrics(run);
  }, 120_000);

  it("--checkpoint-dir without --model-checkpoint evaluates the directory's newest checkpoint, writing nothing there", async () => {
    const before = (await readdir(checkpointDir)).sort();
    const run = await job('evaluate', ['--checkpoint-dir', checkpointDir]);
    expectRestored(run, 2);
    expect(run.stderr).toContain(
      `parameter-server shards started from the shard parts of ${checkpoint.path}`,
    );
    expectTrainedMetrics(run);
    // Evaluation changes no model: the job neither resumed the training job nor wrote a checkpoint.
    expect((await readdir(checkpointDir)).sort()).toEqual(before);
  }, 120_000);

  it('re-shards the checkpoint onto --num-ps 3 with the same metrics', async () => {
    const run = await job('evaluate', checkpointDir, ['--num-ps', '3']);
    expectRestored(run, 3);
    expectTrainedMetrics(run);
  }, 120_000);
});

describe('edl predict --model-checkpoint of a model trained with --num-ps 2', () => {
  it('writes the outputs of the model edl export assembled from the same checkpoint', async () => {
    const output = path.join(dir, 'predictions.jsonl');
    const run = await job('predict', checkpointDir, ['--output', output]);
    expectRestored(run, 2);
    const lines = (await readFile(output, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { record: number; output: number[] });
    expect(lines.map((l) => l.record)).toEqual([...Array(PREDICT_RECORDS).keys()]);

    // `edl train` exported the model at its end: plain TensorFlow.js, tables as standard layers.
    await selectBackend({ backend: 'cpu' });
    const exportDir = path.join(checkpointDir, 'model');
    const json = JSON.parse(await readFile(path.join(exportDir, 'model.json'), 'utf8')) as tf.io.ModelJSON;
    const weights = await readFile(path.join(exportDir, 'weights.bin'));
    const exported = await tfl.loadLayersModel(
      tf.io.fromMemory({
        modelTopology: json.modelTopology,
        weightSpecs: json.weightsManifest.flatMap((group) => group.weights),
        weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
      }),
    );
    // The exported table (`item_rows`) has a row per id up to the largest trained one only.
    const itemRows = exported.getLayer('item_rows').getWeights()[0]?.shape[0] as number;
    const ids = tf.tensor2d(predictIds, [PREDICT_RECORDS, IDS_PER_EXAMPLE]);
    const x = tf.tensor2d(predictX, [PREDICT_RECORDS, DENSE_FEATURES]);
    const expected = (await (exported.predict([ids, x]) as tf.Tensor).data()) as Float32Array;
    let compared = 0;
    lines.forEach((line, i) => {
      const inTable = predictIds
        .slice(i * IDS_PER_EXAMPLE, (i + 1) * IDS_PER_EXAMPLE)
        .every((id) => id < itemRows);
      if (!inTable) return;
      compared++;
      expect(line.output[0], `record ${i}`).toBeCloseTo(expected[i] as number, 5);
    });
    expect(compared).toBeGreaterThan(PREDICT_RECORDS / 2);
    // The trained model, not a constant: its outputs differ between records.
    expect(Math.max(...expected) - Math.min(...expected)).toBeGreaterThan(0.05);
  }, 120_000);
});

describe('edl evaluate of a checkpoint whose shard parts cannot be used', () => {
  it('refuses a checkpoint without shard parts for a model with distributed embedding tables, naming it', async () => {
    // The same model state written by a job without --num-ps: no parts, no parameterServers.
    const found = await findCheckpoint(checkpoint.path);
    if (found === undefined) throw new Error('no checkpoint');
    const { parameterServers: _, ...dense } = found.checkpoint;
    const denseDir = path.join(dir, 'dense');
    const file = await writeCheckpoint(denseDir, dense);
    const refused = async (extra: string[], what: string) => {
      const run = await job('evaluate', denseDir, extra);
      expect(run.code, run.stderr.slice(-3000)).toBe(1);
      expect(run.stderr).toContain(
        `Checkpoint ${file} (model version ${checkpoint.version}) has no parameter-server shard parts, so ${what} cannot be restored: its job ran without --num-ps`,
      );
      // No shard started from the initializer's rows.
      expect(run.events.filter((e) => e.event === 'listening')).toEqual([]);
    };
    // Without --num-ps the model's layers say it needs shards; with it, the shards would be empty.
    await refused([], "the model's distributed embedding tables ('item')");
    await refused(['--num-ps', '2'], 'its embedding rows');
  }, 120_000);

  it('refuses a checkpoint whose shard parts are missing, naming it and the parts', async () => {
    const partsMissing = path.join(dir, 'parts-missing');
    await mkdir(partsMissing);
    await cp(checkpoint.path, path.join(partsMissing, path.basename(checkpoint.path)));
    const run = await job('evaluate', partsMissing);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `Checkpoint ${path.join(partsMissing, path.basename(checkpoint.path))} (model version ${checkpoint.version}) was written by 2 parameter-server shards, but its shard parts cannot be used`,
    );
    expect(run.stderr).toContain(shardCheckpointDirName(checkpoint.version));
  }, 60_000);

  it('never uses shard parts that no checkpoint commits', async () => {
    // The parts of a version whose master died before its file: a complete set, uncommitted.
    const uncommitted = path.join(dir, 'uncommitted');
    const parts = shardCheckpointDirName(checkpoint.version);
    await cp(path.join(checkpointDir, parts), path.join(uncommitted, parts), { recursive: true });
    expect((await readdir(path.join(uncommitted, parts))).length).toBeGreaterThan(2);
    const run = await job('evaluate', uncommitted);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`--model-checkpoint ${uncommitted} holds no committed checkpoint`);
    expect(run.stderr).toContain('shard parts (ps-<version>/) that no checkpoint commits are never used');
    expect(run.events.filter((e) => e.event === 'listening')).toEqual([]);
    // The same directory as --checkpoint-dir: refused the same way, naming that option.
    const fromDir = await job('evaluate', ['--checkpoint-dir', uncommitted]);
    expect(fromDir.code).toBe(1);
    expect(fromDir.stderr).toContain(`--checkpoint-dir ${uncommitted} holds no committed checkpoint`);
  }, 60_000);
});

describe('edl evaluate --model-checkpoint s3://', () => {
  const s3 = bucketS3rverForSuite();

  const uploadParts = (prefix: string) => uploadShardParts(checkpointDir, checkpoint.version, prefix);

  it("restores the shard parts beside the checkpoint's manifest, with the training job's metrics", async () => {
    const prefix = 's3://bucket/committed/';
    await uploadParts(prefix);
    const found = await findCheckpoint(checkpoint.path);
    if (found === undefined) throw new Error('no checkpoint');
    // The master's object and its manifest, written last: the commit.
    const manifest = await writeCheckpoint(prefix, found.checkpoint);
    const run = await job('evaluate', prefix, ['--num-ps', '3'], s3().env);
    expectRestored(run, 3);
    expect(run.stderr).toContain(`parameter-server shards started from the shard parts of ${manifest}`);
    expectTrainedMetrics(run);
  }, 120_000);

  it('refuses shard parts whose manifest was never written', async () => {
    const prefix = 's3://bucket/uncommitted/';
    await uploadParts(prefix);
    const run = await job('evaluate', prefix, [], s3().env);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`--model-checkpoint ${prefix} holds no committed checkpoint`);
    expect(run.events.filter((e) => e.event === 'listening')).toEqual([]);
  }, 60_000);
});
