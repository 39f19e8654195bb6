import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import type { DataReader, JsonObject } from '@edl/data';
import { MasterClient } from '@edl/proto';
import {
  type BackendName,
  jsonLineLogger,
  loadNonTrainableWeights,
  runWorker,
  saveNonTrainableWeights,
  selectBackend,
  type WorkerProgress,
  withRetries,
} from '@edl/worker';
import type { Command } from '../command.js';
import { UsageError } from '../command.js';
import { loadModel, openReader } from '../job/model-and-readers.js';
import type { WorkerStatsFile } from '../job/run-job.js';

const usage = `Usage: edl worker --model-def FILE [options]

Runs one worker of a job: the process that 'edl train | evaluate | predict' start, one per
--num-workers. It reads the master's address, the job token and its id from the environment
(EDL_MASTER_ADDR, EDL_JOB_TOKEN, EDL_WORKER_ID), trains / evaluates / predicts on the tasks the
master hands out, and logs one JSON object per line on stdout.

Options:
  --model-def FILE            model definition module (.ts or .js) or zoo name
  --training-data ORIGIN      --validation-data ORIGIN   --prediction-data ORIGIN
  --data-reader TYPE          --data-reader-params JSON
  --minibatch-size N          records per minibatch (default 64)
  --backend NAME              auto | webgpu | tensorflow | wasm | cpu (default auto)
  --get-model-steps N         pull the model every N steps (default 1)
  --prefetch N                minibatches prepared ahead of compute (default 2)
  --stats-dir DIR             write <worker id>.json (timers) and prediction outputs there
  --export-dir DIR            after training, save the non-trainable weights (batch-norm
                              statistics) there, beside the master's checkpoints
  --model-checkpoint PATH     load the non-trainable weights saved beside this checkpoint
  --allow-non-finite          train on NaN / infinite losses and gradients (default: fail the job)`;

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new UsageError(`${name} is not set: 'edl worker' is started by a master`);
  return value;
}

/** `edl worker`: one worker process of a job. */
export const command: Command = {
  name: 'worker',
  usage,
  async run(argv, io) {
    let values: Record<string, string | undefined>;
    try {
      ({ values } = parseArgs({
        args: argv,
        strict: true,
        options: {
          'model-def': { type: 'string' },
          'training-data': { type: 'string' },
          'validation-data': { type: 'string' },
          'prediction-data': { type: 'string' },
          'data-reader': { type: 'string' },
          'data-reader-params': { type: 'string' },
          'minibatch-size': { type: 'string' },
          backend: { type: 'string' },
          'get-model-steps': { type: 'string' },
          prefetch: { type: 'string' },
          'stats-dir': { type: 'string' },
          'export-dir': { type: 'string' },
          'model-checkpoint': { type: 'string' },
          'allow-non-finite': { type: 'boolean' },
        },
      }) as unknown as { values: Record<string, string | undefined> });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
    const modelDef = values['model-def'];
    if (modelDef === undefined) throw new UsageError('--model-def is required');
    const address = env('EDL_MASTER_ADDR');
    const token = env('EDL_JOB_TOKEN');
    const workerId = env('EDL_WORKER_ID');
    const logger = jsonLineLogger(io.stdout, { worker: workerId, pid: process.pid });
    const int = (name: string, fallback: number) => {
      const raw = values[name];
      const n = raw === undefined ? fallback : Number(raw);
      if (!Number.isSafeInteger(n) || n < 0)
        throw new UsageError(`Expected a non-negative integer for --${name} but received '${raw}'`);
      return n;
    };
    const backend = await selectBackend({
      backend: (values.backend ?? 'auto') as BackendName | 'auto',
      logger,
    });
    const definition = await loadModel(modelDef);
    const params = (
      values['data-reader-params'] ? JSON.parse(values['data-reader-params']) : {}
    ) as JsonObject;
    const open = async (origin: string | undefined) =>
      origin === undefined ? undefined : openReader(origin, definition, values['data-reader'], params);
    const training = await open(values['training-data']);
    const evaluation = await open(values['validation-data']);
    const prediction = await open(values['prediction-data']);
    const reader = training ?? evaluation ?? prediction;
    if (reader === undefined)
      throw new UsageError('one of --training-data, --validation-data, --prediction-data is required');
    const statsDir = values['stats-dir'];
    const exportDir = values['export-dir'];
    const checkpoint = values['model-checkpoint'];
    const nonTrainable = checkpoint === undefined ? undefined : loadNonTrainableWeights(checkpoint);
    // One long-lived stream carries get_task / report_task_result / heartbeat: several times cheaper
    // for the master than unary calls. A broken stream fails its calls as UNAVAILABLE, which
    // withRetries retries on a fresh stream.
    const client = await MasterClient.connect(address, token, { transport: 'stream' });
    // A master restarting from its checkpoint, or a lost reply, should not kill the worker.
    const master = withRetries(client, { logger });
    let lastReport = 0;
    const onProgress = (p: WorkerProgress) => {
      const now = performance.now();
      if (now - lastReport < 1000) return;
      lastReport = now;
      logger.info('progress', {
        mode: p.mode,
        epoch: p.epoch,
        records: p.records,
        steps: p.steps,
        loss: p.loss,
        modelVersion: p.modelVersion,
      });
    };
    try {
      const result = await runWorker({
        workerId,
        master,
        modelDefinition: definition,
        reader: reader as DataReader<unknown>,
        ...(evaluation ? { evaluationReader: evaluation } : {}),
        ...(prediction ? { predictionReader: prediction } : {}),
        minibatchSize: int('minibatch-size', 64) || 64,
        getModelSteps: int('get-model-steps', 1) || 1,
        prefetch: int('prefetch', 2),
        // The one boolean flag of `edl worker`; the other values are strings.
        allowNonFinite: (values as Record<string, unknown>)['allow-non-finite'] === true,
        ...(statsDir ? { predictionOutput: path.join(statsDir, `${workerId}.predictions.jsonl`) } : {}),
        logger,
        onProgress,
        ...(nonTrainable ? { nonTrainableWeights: nonTrainable } : {}),
        ...(exportDir
          ? {
              onTrainEnd: async (runner) => {
                const weights = await runner.readNonTrainable();
                if (weights.length === 0) return;
                const file = saveNonTrainableWeights(exportDir, weights, runner.version);
                logger.info('train_end.saved', {
                  file,
                  weights: weights.length,
                  modelVersion: runner.version,
                });
              },
            }
          : {}),
      });
      logger.info('worker.done', {
        steps: result.steps,
        tasks: result.tasksDone,
        failed: result.tasksFailed,
        loss: result.lastLoss,
        seconds: Number(result.timers.totalSeconds.toFixed(3)),
      });
      if (statsDir) {
        const stats: WorkerStatsFile = {
          workerId,
          backend: backend.name,
          steps: result.steps,
          records: { ...result.records },
          ...(result.lastLoss === undefined ? {} : { lastLoss: result.lastLoss }),
          timers: result.timers,
        };
        writeFileSync(path.join(statsDir, `${workerId}.json`), JSON.stringify(stats));
      }
      return result.jobError ? 1 : 0;
    } finally {
      client.close();
      await Promise.all([training, evaluation, prediction].map((r) => r?.close?.()));
      // Dawn (webgpu) can keep handles open after the job; an unref'd timer exits only if it does.
      setTimeout(() => process.exit(), 2000).unref();
    }
  },
};
