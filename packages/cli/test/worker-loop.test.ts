/**
 * The worker loop against a real master over real gRPC, with the workers in this process: training
 * with evaluation, then evaluation-only and prediction-only jobs from the checkpoint.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createDataReader } from '@edl/data';
import { type StartMasterOptions, silentLogger as silentMasterLogger, startMaster } from '@edl/master';
import { censusDefinition, generateCensusCsv } from '@edl/model-zoo';
import { MasterClient, type NamedTensor } from '@edl/proto';
import {
  type MasterConnection,
  runWorker,
  selectBackend,
  tf,
  type WorkerResult,
  withRetries,
} from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

let dir: string;
let trainCsv: string;
let validCsv: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-loop-'));
  trainCsv = await generateCensusCsv({ file: path.join(dir, 'train.csv'), rows: 2000, seed: 1 });
  validCsv = await generateCensusCsv({ file: path.join(dir, 'valid.csv'), rows: 400, seed: 2 });
  await selectBackend({ backend: 'cpu' });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const definition = censusDefinition(0.02);

/**
 * Runs `count` workers in this process through the master's InstanceManager interface, so that the
 * master keeps serving until they have all left (as it does for worker processes).
 */
async function startWithWorkers(
  options: StartMasterOptions,
  count: number,
  worker: (i: number, client: MasterClient) => Promise<WorkerResult>,
) {
  let running = 0;
  const done: Array<Promise<WorkerResult>> = [];
  const handle = await startMaster({
    ...options,
    instanceManager: (address, token) => ({
      targetWorkers: count,
      get runningWorkers() {
        return running;
      },
      async start() {
        for (let i = 0; i < count; i++) {
          running++;
          done.push(
            (async () => {
              // The transports of `edl worker`: dispatch on a TaskBatchStream, gradients on a GradientStream.
              const client = await MasterClient.connect(address, token, {
                transport: 'batch',
                gradientTransport: 'stream',
              });
              try {
                return await worker(i, client);
              } finally {
                client.close();
                running--;
              }
            })(),
          );
        }
      },
      scaleTo: async () => count,
      stop: async () => {},
    }),
  });
  const results = await Promise.all(done);
  const job = await handle.wait();
  return {
    job,
    results,
    gradients: handle.master.gradientOutcomes,
    model: handle.master.store.getModel().variables,
  };
}

async function runJob(options: Partial<StartMasterOptions>, workers: number, predictionOutput?: string) {
  const trainingReader = await createDataReader(trainCsv, { header: true, recordsPerShard: 500 });
  const evaluationReader = await createDataReader(validCsv, { header: true, recordsPerShard: 200 });
  return startWithWorkers(
    {
      jobType: 'training',
      minibatchSize: 50,
      numMinibatchesPerTask: 4,
      logger: silentMasterLogger,
      parameterStore: { optimizer: { type: 'adam', learningRate: 0.02 } },
      ...options,
      ...(options.jobType === 'prediction'
        ? { predictionReader: evaluationReader }
        : { trainingReader, evaluationReader }),
    } as StartMasterOptions,
    workers,
    (i, client) =>
      runWorker({
        workerId: `worker-${i}`,
        master: client,
        modelDefinition: definition as never,
        reader: trainingReader as never,
        evaluationReader: evaluationReader as never,
        predictionReader: evaluationReader as never,
        minibatchSize: 50,
        ...(predictionOutput ? { predictionOutput: `${predictionOutput}.${i}.jsonl` } : {}),
      }),
  );
}

describe('runWorker with a real master', () => {
  const checkpointDir = () => path.join(dir, 'ckpt');

  it('trains with 2 workers, evaluating each round, down to a loss threshold', async () => {
    const tensorsBefore = tf.memory().numTensors;
    const { job, results } = await runJob(
      {
        jobType: 'training-with-evaluation',
        numEpochs: 4,
        evaluationSteps: 20,
        checkpointDir: checkpointDir(),
      },
      2,
    );
    expect(job.state).toBe('succeeded');
    const trained = results.reduce((n, r) => n + r.records.training, 0);
    expect(trained).toBe(4 * 2000);
    expect(results.every((r) => r.steps > 0 && r.tasksFailed === 0)).toBe(true);
    expect(job.modelVersion).toBe(results.reduce((n, r) => n + r.steps, 0));
    const last = job.evaluations.at(-1);
    expect(last?.records).toBe(400);
    expect(last?.metrics.accuracy).toBeGreaterThan(0.75);
    expect(last?.metrics.auc).toBeGreaterThan(0.8);
    const losses = results.map((r) => r.lastLoss as number);
    expect(Math.min(...losses)).toBeLessThan(0.5);
    // Nothing leaks per step: what remains is the two models' weights (and their variables' copies).
    expect(tf.memory().numTensors - tensorsBefore).toBeLessThan(40);
    for (const r of results) {
      expect(r.timers.job.compute_loss.count).toBeGreaterThan(0);
      expect(r.timers.job.get_task.count).toBeGreaterThan(0);
      expect(r.timers.tasks.length).toBeGreaterThan(0);
    }
  }, 120_000);

  it('runs an evaluation-only job on the trained checkpoint', async () => {
    const { job, results } = await runJob({ jobType: 'evaluation', modelCheckpoint: checkpointDir() }, 1);
    expect(job.state).toBe('succeeded');
    expect(results[0]?.records.evaluation).toBe(400);
    expect(results[0]?.records.training).toBe(0);
    expect(job.evaluations[0]?.metrics.accuracy).toBeGreaterThan(0.75);
  }, 60_000);

  it('runs a prediction-only job and writes one output per record', async () => {
    const out = path.join(dir, 'pred');
    const { job, results } = await runJob(
      { jobType: 'prediction', modelCheckpoint: checkpointDir() },
      2,
      out,
    );
    expect(job.state).toBe('succeeded');
    expect(results.reduce((n, r) => n + r.records.prediction, 0)).toBe(400);
    const lines = results
      .flatMap((_, i) => {
        try {
          return readFileSync(`${out}.${i}.jsonl`, 'utf8').trim().split('\n');
        } catch {
          return [];
        }
      })
      .map((l) => JSON.parse(l) as { record: number; output: number[] });
    expect(lines.map((l) => l.record).sort((a, b) => a - b)).toEqual(
      Array.from({ length: 400 }, (_, i) => i),
    );
    expect(
      lines.every(
        (l) => l.output.length === 1 && (l.output[0] as number) >= 0 && (l.output[0] as number) <= 1,
      ),
    ).toBe(true);
  }, 60_000);
});

describe('runWorker: minibatches that do not line up with tasks', () => {
  it('trains a minibatch that spans two tasks as one step that reports both ranges', async () => {
    const { job, results } = await runJobWith({ minibatchSize: 64 }, { numEpochs: 2 });
    expect(job.state).toBe('succeeded');
    expect(results.reduce((n, r) => n + r.records.training, 0)).toBe(2 * 2000);
    expect(results.every((r) => r.tasksFailed === 0)).toBe(true);
    // 2000 records in tasks of 200: 64-record minibatches straddle task ends, yet each is one step
    // (at most one short minibatch per epoch), and every step is one model version.
    const steps = results.reduce((n, r) => n + r.steps, 0);
    expect(steps).toBeGreaterThanOrEqual(Math.ceil(4000 / 64));
    expect(steps).toBeLessThanOrEqual(2 * Math.ceil(2000 / 64));
    expect(job.modelVersion).toBe(steps);
    // One worker: no gradient is ever stale, so none is computed twice.
    expect(results[0]?.timers.gradients).toEqual({ computed: steps, wasted: 0 });
  }, 60_000);

  it('keeps shards that are not whole minibatches to one step per minibatch', async () => {
    // Shards of 500 records, tasks of up to 8 x 64: every task ends in a short minibatch that the
    // next task's records complete.
    const { job, results } = await runJobWith(
      { minibatchSize: 64 },
      { minibatchSize: 64, numMinibatchesPerTask: 8, numEpochs: 1 },
    );
    expect(job.state).toBe('succeeded');
    expect(results[0]?.records.training).toBe(2000);
    expect(results[0]?.steps).toBe(Math.ceil(2000 / 64));
  }, 60_000);

  it('fails the task, not hangs, when datasetFn throws before it reads a record', async () => {
    const broken = {
      ...definition,
      // biome-ignore lint/correctness/useYield: it fails before its first minibatch, on purpose
      datasetFn: async function* () {
        throw new Error('cannot parse the schema');
      },
    };
    const { job, results } = await runJobWith(
      { modelDefinition: broken as never },
      { numEpochs: 1, maxTaskFailures: 2 },
    );
    expect(job.state).toBe('failed');
    expect(job.error?.message).toContain('cannot parse the schema');
    expect(results[0]?.tasksFailed).toBeGreaterThanOrEqual(2);
  }, 60_000);

  it('fails the job loudly when datasetFn drops records', async () => {
    const dropping = {
      ...definition,
      datasetFn: async function* (records: AsyncIterable<unknown>, mode: never, meta: never) {
        async function* everyOther() {
          let i = 0;
          for await (const record of records) if (i++ % 2 === 0) yield record;
        }
        yield* definition.datasetFn(everyOther() as never, mode, meta);
      },
    };
    const { job, results } = await runJobWith(
      { modelDefinition: dropping as never },
      { numEpochs: 1, maxTaskFailures: 2 },
    );
    expect(job.state).toBe('failed');
    expect(job.error?.message).toMatch(/datasetFn consumed \d+ of the \d+ records of task \d+/);
    expect(results[0]?.tasksFailed).toBeGreaterThan(0);
  }, 60_000);
});

describe('runWorker: pushing gradients ahead of compute', () => {
  it('computes each step while the master applies the previous one, training every record once', async () => {
    // Without a replica, each step is computed on a model that lacks the step still in flight.
    const { job, results, gradients } = await runJobWith(
      { pushAhead: true, mirrorUpdates: false },
      { numEpochs: 2 },
    );
    expect(job.state).toBe('succeeded');
    expect(results[0]?.records.training).toBe(2 * 2000);
    const steps = results[0]?.steps as number;
    expect(job.modelVersion).toBe(steps);
    expect(results[0]?.timers.gradients).toEqual({ computed: steps, wasted: 0 });
    // One worker pushing ahead: every gradient but the first of a segment is computed on a model
    // that lacks its own previous step, one version old when applied.
    expect(gradients.stale).toBe(0);
    expect(gradients.stalenessHistogram[1]).toBeGreaterThan(steps / 2);
    expect(gradients.applied).toBe(steps);
  }, 60_000);

  it('waits for each answer with pushAhead false: one worker never lags its own model', async () => {
    const { job, results, gradients } = await runJobWith({ pushAhead: false }, { numEpochs: 1 });
    expect(job.state).toBe('succeeded');
    expect(results[0]?.records.training).toBe(2000);
    expect(gradients.stalenessHistogram[0]).toBe(results[0]?.steps);
  }, 60_000);

  it("turns itself off ('auto') when a sync-mode master refuses a gradient pushed ahead", async () => {
    const { job, results, gradients } = await runJobWith(
      { pushAhead: 'auto', mirrorUpdates: false },
      {
        numEpochs: 1,
        parameterStore: { mode: 'sync', optimizer: { type: 'adam', learningRate: 0.02 } },
      },
    );
    expect(job.state).toBe('succeeded');
    expect(results[0]?.records.training).toBe(2000);
    const steps = results[0]?.steps as number;
    // The refused gradient and the one computed meanwhile (on a model one version old, too) are
    // recomputed on the master's model; every later step waits for its answer.
    expect(gradients.stale).toBe(2);
    expect(results[0]?.timers.gradients).toEqual({ computed: steps + 2, wasted: 2 });
    expect(job.modelVersion).toBe(steps);
  }, 60_000);
});

/** `client` as a worker's master connection, with some calls replaced. */
function connectionWith(client: MasterClient, replaced: Partial<MasterConnection>): MasterConnection {
  return {
    getTask: (...a) => client.getTask(...a),
    reportTaskResult: (...a) => client.reportTaskResult(...a),
    getModel: (...a) => client.getModel(...a),
    reportVariables: (...a) => client.reportVariables(...a),
    reportEvaluationMetrics: (...a) => client.reportEvaluationMetrics(...a),
    heartbeat: (...a) => client.heartbeat(...a),
    reportGradient: (...a) => client.reportGradient(...a),
    ...replaced,
  };
}

describe("runWorker: mirroring the master's updates on a replica", () => {
  /** The variables' bit patterns, to compare models exactly (-0 and NaN included). */
  const bits = (model: readonly NamedTensor[]) =>
    model.map((v) => [v.name, Array.from(new Uint32Array(v.values.slice().buffer))]);

  it('trains one worker on its replica: every gradient mirrored, none wasted, the very model of waiting for each answer', async () => {
    const mirrored = await runJobWith({}, { numEpochs: 2 });
    const waiting = await runJobWith({ mirrorUpdates: false }, { numEpochs: 2 });
    for (const run of [mirrored, waiting]) {
      expect(run.job.state).toBe('succeeded');
      expect(run.results[0]?.records.training).toBe(2 * 2000);
    }
    const steps = mirrored.results[0]?.steps as number;
    expect(mirrored.gradients).toMatchObject({ applied: steps, stale: 0, mirrored: steps });
    expect(mirrored.gradients.stalenessHistogram[0]).toBe(steps);
    expect(mirrored.results[0]?.timers.gradients).toEqual({ computed: steps, wasted: 0 });
    expect(waiting.gradients.mirrored).toBe(0);
    // Each step of the mirroring worker was computed on exactly the model the master held.
    expect(bits(mirrored.model)).toEqual(bits(waiting.model));
  }, 90_000);

  it("stops mirroring when a checksum does not match, and goes on from the master's model", async () => {
    const warnings: string[] = [];
    const logger = { info: () => {}, warn: (event: string) => void warnings.push(event) };
    let mirroredAnswers = 0;
    // A master connection whose fourth mirrored answer carries a wrong checksum, as a replica
    // that drifted from the master's model would see it.
    const tampered = (client: MasterClient) =>
      connectionWith(client, {
        reportGradient: async (report) => {
          const answer = await client.reportGradient(report);
          if (answer.mirrored !== true || ++mirroredAnswers !== 4) return answer;
          return { ...answer, modelChecksum: ((answer.modelChecksum ?? 0) ^ 1) >>> 0 };
        },
      });
    const run = await runJobWith({ logger }, { numEpochs: 1 }, tampered);
    const waiting = await runJobWith({ mirrorUpdates: false }, { numEpochs: 1 });
    expect(run.job.state).toBe('succeeded');
    expect(run.results[0]?.records.training).toBe(2000);
    expect(warnings).toEqual(['replica.mismatch']);
    // Four mirrored steps, then none; the step computed on the doubted replica is computed again.
    expect(run.gradients.mirrored).toBe(4);
    const steps = run.results[0]?.steps as number;
    expect(run.results[0]?.timers.gradients).toEqual({ computed: steps + 1, wasted: 1 });
    expect(bits(run.model)).toEqual(bits(waiting.model));
  }, 90_000);

  it('trains two mirroring workers, each record once, wasting no more than 5% of the steps', async () => {
    const { job, results, gradients } = await runJobWith({}, { numEpochs: 2 }, undefined, 2);
    expect(job.state).toBe('succeeded');
    expect(results.reduce((n, r) => n + r.records.training, 0)).toBe(2 * 2000);
    const steps = results.reduce((n, r) => n + r.steps, 0);
    const wasted = results.reduce((n, r) => n + (r.timers.gradients?.wasted ?? 0), 0);
    expect(gradients.applied).toBe(steps);
    // The bound: at most 5% of the applied steps computed in vain (stale or on a replica).
    expect(wasted).toBeLessThanOrEqual(0.05 * steps);
  }, 90_000);
  it('mirrors again once the other worker has left and it trains alone', async () => {
    let replicasStarted = 0;
    const logger = {
      info: (event: string) => {
        if (event === 'replica.started') replicasStarted++;
      },
      warn: () => {},
    };
    // worker-1 is told the job is over after its second task: worker-0 goes on alone.
    let tasksOfWorker1 = 0;
    const leaving = (client: MasterClient, i: number) =>
      i === 0
        ? client
        : connectionWith(client, {
            getTask: async (workerId) =>
              ++tasksOfWorker1 > 2 ? { jobFinished: true, jobError: '' } : client.getTask(workerId),
          });
    const { job, results, gradients } = await runJobWith({ logger }, { numEpochs: 2 }, leaving, 2);
    expect(job.state).toBe('succeeded');
    expect(results.reduce((n, r) => n + r.records.training, 0)).toBe(2 * 2000);
    const steps = results.reduce((n, r) => n + r.steps, 0);
    const wasted = results.reduce((n, r) => n + (r.timers.gradients?.wasted ?? 0), 0);
    expect(gradients.applied).toBe(steps);
    expect(results[1]?.steps).toBeLessThan(steps / 4);
    // One replica each at the start, then worker-0's again: most of its solo steps are mirrored.
    expect(replicasStarted).toBeGreaterThanOrEqual(3);
    expect(gradients.mirrored).toBeGreaterThan(steps / 2);
    expect(wasted).toBeLessThanOrEqual(0.05 * steps);
  }, 90_000);
});

async function runJobWith(
  worker: Record<string, unknown>,
  master: Partial<StartMasterOptions>,
  connect: (client: MasterClient, i: number) => MasterConnection = (client) => client,
  workers = 1,
) {
  const trainingReader = await createDataReader(trainCsv, { header: true, recordsPerShard: 500 });
  return startWithWorkers(
    {
      jobType: 'training',
      minibatchSize: 50,
      numMinibatchesPerTask: 4,
      logger: silentMasterLogger,
      parameterStore: { optimizer: { type: 'adam', learningRate: 0.02 } },
      trainingReader,
      ...master,
    } as StartMasterOptions,
    workers,
    (i, client) =>
      runWorker({
        workerId: `worker-${i}`,
        master: connect(client, i),
        modelDefinition: definition as never,
        reader: trainingReader as never,
        minibatchSize: 50,
        ...worker,
      }),
  );
}

describe('withRetries', () => {
  it('retries get_task until a master comes up on its address', async () => {
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, '127.0.0.1', () => {
        const address = server.address();
        server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
      });
    });
    const client = new MasterClient(`127.0.0.1:${port}`, 'job-token', { deadlineMs: 2000 });
    const warnings: string[] = [];
    const master = withRetries(client, {
      baseDelayMs: 50,
      attempts: 12,
      logger: {
        info() {},
        warn: (event, fields) => warnings.push(`${event} ${fields?.method} ${fields?.error}`),
      },
    });
    const answer = master.getTask('worker-0');
    await new Promise((resolve) => setTimeout(resolve, 400));
    const handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'only-shard', start: 0, count: 10 }],
      minibatchSize: 5,
      numMinibatchesPerTask: 1,
      port,
      token: 'job-token',
      logger: silentMasterLogger,
    });
    try {
      const { task } = await answer;
      expect(task?.shardName).toBe('only-shard');
      expect(warnings.length).toBeGreaterThan(0);
      expect(warnings[0]).toBe('master.retry getTask UNAVAILABLE');
    } finally {
      client.close();
      await handle.stop();
    }
  }, 30_000);

  it('gives up after its attempts with the gRPC error', async () => {
    const client = new MasterClient('127.0.0.1:1', 'job-token', { deadlineMs: 500 });
    const error = await withRetries(client, { attempts: 2, baseDelayMs: 10 })
      .getModel('worker-0', -1)
      .catch((e: unknown) => e);
    client.close();
    expect((error as { code?: string }).code).toBe('UNAVAILABLE');
  }, 30_000);
});
