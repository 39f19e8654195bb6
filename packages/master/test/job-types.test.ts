import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../src/logger.js';
import { startMaster } from '../src/start-master.js';
import { buildDist, simWorker } from './helpers.js';

beforeAll(() => buildDist(['-b packages/proto', '-b packages/data']), 180_000);
const dir = mkdtempSync(join(tmpdir(), 'edl-job-types-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const workers = (numWorkers: number) => ({
  args: [simWorker],
  numWorkers,
  env: { SIM_RECORDS: '200' },
  onOutput: () => {},
});

describe('job types over gRPC with worker processes', () => {
  it('evaluation-only: evaluates the model of a training checkpoint and writes the metrics file', async () => {
    const checkpointDir = join(dir, 'trained');
    const training = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 't', start: 0, count: 200 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 5,
      checkpointDir,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      workers: workers(2),
    });
    const trained = await training.wait();
    expect(trained).toMatchObject({ state: 'succeeded', modelVersion: 20 });

    const metricsFile = join(dir, 'metrics.jsonl');
    const evaluation = await startMaster({
      jobType: 'evaluation',
      evaluationShards: [{ name: 'v', start: 0, count: 90 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 3,
      modelCheckpoint: checkpointDir,
      metricsFile,
      logger: silentLogger,
      workers: workers(2),
    });
    const result = await evaluation.wait();
    expect(result.state).toBe('succeeded');
    expect(result.evaluations).toHaveLength(1);
    // Evaluated the checkpoint's version: the workers pulled that model, not fresh variables.
    expect(result.evaluations[0]).toMatchObject({ modelVersion: 20, records: 90 });
    // Wrong exactly when id % 3 === 0: 30 of 0..89.
    expect(result.evaluations[0]!.metrics.accuracy).toBeCloseTo(60 / 90, 10);
    const lines = readFileSync(metricsFile, 'utf8').trim().split('\n');
    expect(lines.map((l) => JSON.parse(l).modelVersion)).toEqual([20]);
  }, 90_000);

  it('prediction-only: every task dispatched and reported once, then the job ends', async () => {
    const handle = await startMaster({
      jobType: 'prediction',
      predictionShards: [
        { name: 'p1', start: 0, count: 75 },
        { name: 'p2', start: 0, count: 30 },
      ],
      minibatchSize: 10,
      numMinibatchesPerTask: 2,
      logger: silentLogger,
      workers: workers(3),
    });
    const result = await handle.wait();
    expect(result.state).toBe('succeeded');
    expect(handle.master.status()).toMatchObject({
      recordsDone: 105,
      recordsTotal: 105,
      todoTasks: 0,
      doingTasks: 0,
    });
    expect(result.modelVersion).toBe(0);
  }, 60_000);
});
