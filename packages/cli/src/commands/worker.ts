import { writeFileSync } from 'node:fs';
import path from 'node:path';
import type { DataReader, JsonObject } from '@edl/data';
import { configureAutotune } from '@edl/data/autotune';
import type { DataPipelineReport } from '@edl/proto';
import type { WorkerProgress } from '@edl/worker';
import { parseCommandLine } from '../args.js';
import type { Command } from '../command.js';
import { UsageError } from '../command.js';
import { dataPipelineReporter, dataRamBudgetValue } from '../job/data-budget.js';
import { BACKEND_CHOICES } from '../job/job-options.js';
import type { WorkerStatsFile } from '../job/run-job.js';
import { applyS3Options, S3_OPTION_SPEC, S3_OPTIONS_HELP, s3Options } from '../job/s3-options.js';

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
  --push-ahead auto|on|off    compute the next step while the master applies this one's
                              gradient: faster, each gradient one own update staler (default
                              off; auto: on until the master refuses such a gradient as stale,
                              as a sync-mode master does)
  --mirror-updates on|off     apply this worker's own gradients to a replica of the master's
                              model and optimizer, and compute the next step on it while the
                              master applies the same gradient; a master whose update was this
                              gradient alone answers with a checksum instead of the model
                              (default on)
  --data-ram-budget SIZE      memory the 'auto' stages of the data pipeline may hold, e.g. 2GiB
                              or 25% (default: half of this host's memory or of its cgroup
                              limit; 'edl train' gives each of its workers an equal share)
  --data-cpu-budget N         threads the 'auto' stages may run together (default: the cores
                              less one, at least 1)
  --stats-dir DIR             write <worker id>.json (timers) and prediction outputs there
  --export-dir DIR            after training, save the non-trainable weights (batch-norm
                              statistics) there, beside the master's checkpoints
  --model-checkpoint PATH     load the non-trainable weights saved beside this checkpoint
  --allow-non-finite          train on NaN / infinite losses and gradients (default: fail the job)
  --ps-addresses LIST         HOST:PORT of each parameter-server shard, comma-separated, in shard
                              order (default: EDL_PS_ADDRESSES): required by a model with
                              distributed embedding layers, whose rows the shards hold
  --dense-on shards|master    with --ps-addresses: whether the shards hold the model's dense
                              variables too, as the job's master was told (default: EDL_DENSE_ON,
                              else master)

${S3_OPTIONS_HELP}`;

const PUSH_AHEAD = { auto: 'auto', on: true, off: false } as const;

/** `--ps-addresses` (or EDL_PS_ADDRESSES): HOST:PORT of each shard, in shard order. */
function parsePsAddresses(list: string | undefined): string[] | undefined {
  if (list === undefined || list === '') return undefined;
  const addresses = list.split(',').map((a) => a.trim());
  addresses.forEach((address, i) => {
    if (!/^[^\s:]+:\d{1,5}$/.test(address) && !/^\[[0-9a-fA-F:.]+\]:\d{1,5}$/.test(address))
      throw new UsageError(
        `--ps-addresses must be HOST:PORT of each parameter-server shard, comma-separated, but shard ${i} is '${address}'`,
      );
  });
  return addresses;
}

function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '')
    throw new UsageError(`${name} is not set: 'edl worker' is started by a master`);
  return value;
}

const withDataPipeline = (report: DataPipelineReport | undefined) =>
  report === undefined ? {} : { dataPipeline: report };

/** `edl worker`: one worker process of a job. */
export const command: Command = {
  name: 'worker',
  usage,
  async run(argv, io) {
    // Every option and the environment are checked before TensorFlow.js, gRPC or the data load:
    // a bad value fails at once instead of after minutes of retries against the master.
    const { values } = parseCommandLine(argv, {
      'model-def': { type: 'string' },
      'training-data': { type: 'string' },
      'validation-data': { type: 'string' },
      'prediction-data': { type: 'string' },
      'data-reader': { type: 'string' },
      'data-reader-params': { type: 'json-object' },
      'minibatch-size': { type: 'integer', min: 1 },
      backend: { type: 'choice', choices: BACKEND_CHOICES },
      'get-model-steps': { type: 'integer', min: 1 },
      prefetch: { type: 'integer' },
      'stats-dir': { type: 'string' },
      'export-dir': { type: 'string' },
      'model-checkpoint': { type: 'string' },
      'log-level': { type: 'choice', choices: ['debug', 'info', 'warn', 'error', 'silent'] },
      'allow-non-finite': { type: 'boolean' },
      'push-ahead': { type: 'choice', choices: ['auto', 'on', 'off'] },
      'mirror-updates': { type: 'choice', choices: ['on', 'off'] },
      'ps-addresses': { type: 'string' },
      'dense-on': { type: 'choice', choices: ['shards', 'master'] },
      'data-ram-budget': { type: 'string' },
      'data-cpu-budget': { type: 'integer', min: 1 },
      ...S3_OPTION_SPEC,
    });
    const psAddresses = parsePsAddresses(values['ps-addresses'] ?? process.env.EDL_PS_ADDRESSES);
    const ramBudget = values['data-ram-budget'];
    configureAutotune({
      ...(ramBudget === undefined ? {} : { ramBudgetBytes: dataRamBudgetValue(ramBudget) }),
      ...(values['data-cpu-budget'] === undefined ? {} : { cpuBudget: values['data-cpu-budget'] }),
    });
    const dataPipelineStats = dataPipelineReporter();
    const s3 = s3Options(values);
    const modelDef = values['model-def'];
    if (modelDef === undefined) throw new UsageError('--model-def is required');
    if (
      values['training-data'] === undefined &&
      values['validation-data'] === undefined &&
      values['prediction-data'] === undefined
    )
      throw new UsageError('one of --training-data, --validation-data, --prediction-data is required');
    const address = env('EDL_MASTER_ADDR');
    const token = env('EDL_JOB_TOKEN');
    const workerId = env('EDL_WORKER_ID');
    const params = (values['data-reader-params'] ?? {}) as JsonObject;
    await applyS3Options(s3);

    const [
      { EmbeddingClient, MasterClient },
      { placeDenseVariables, shardOfId },
      {
        jsonLineLogger,
        loadNonTrainableWeights,
        runWorker,
        saveNonTrainableWeights,
        selectBackend,
        Timers,
        withRetries,
      },
      { loadModel, openReader },
      { remoteStorageStats },
    ] = await Promise.all([
      import('@edl/proto'),
      import('@edl/ps'),
      import('@edl/worker'),
      import('../job/model-and-readers.js'),
      import('../job/storage-stats.js'),
    ]);
    const logger = jsonLineLogger(
      io.stdout,
      {
        worker: workerId,
        pid: process.pid,
        ...(process.env.EDL_JOB_ID ? { job: process.env.EDL_JOB_ID } : {}),
      },
      { level: values['log-level'] ?? 'info' },
    );
    const backend = await selectBackend({ backend: values.backend ?? 'auto', logger });
    const definition = await loadModel(modelDef);
    const open = async (origin: string | undefined) =>
      origin === undefined ? undefined : openReader(origin, definition, values['data-reader'], params);
    const training = await open(values['training-data']);
    const evaluation = await open(values['validation-data']);
    const prediction = await open(values['prediction-data']);
    const reader = (training ?? evaluation ?? prediction) as DataReader<unknown>;
    const storageStats = await remoteStorageStats([
      values['training-data'],
      values['validation-data'],
      values['prediction-data'],
    ]);
    const statsDir = values['stats-dir'];
    const exportDir = values['export-dir'];
    const checkpoint = values['model-checkpoint'];
    const nonTrainable = checkpoint === undefined ? undefined : loadNonTrainableWeights(checkpoint);
    // One long-lived stream carries get_task / report_task_result / heartbeat: several times cheaper
    // for the master than unary calls; another carries report_gradient (a step's round trip in less
    // than half the CPU and time of a unary call). A broken stream fails its calls as UNAVAILABLE,
    // which withRetries retries on a fresh stream.
    const client = await MasterClient.connect(address, token, {
      transport: 'batch',
      gradientTransport: 'stream',
    });
    // Worker pods share no disk with the master: the indexes it built when cutting shards come
    // from it, not from another header walk (readers index their remote files on first read).
    const { setRemoteIndexProvider } = await import('@edl/data');
    setRemoteIndexProvider(client, (reason) => logger.warn('index.from_master', { reason }));
    // A master restarting from its checkpoint, or a lost reply, should not kill the worker.
    const master = withRetries(client, { logger });
    const parameterServers =
      psAddresses === undefined
        ? undefined
        : new EmbeddingClient({ addresses: psAddresses, token, shardOfId });
    let lastReport = 0;
    // Own timers, so that a stats file can be written while the worker runs: a worker killed later
    // still appears in the job's timing table (as lost), with what it had done.
    const timers = new Timers();
    const onProgress = (p: WorkerProgress) => {
      const now = performance.now();
      if (now - lastReport < 1000) return;
      lastReport = now;
      if (statsDir) {
        const partial: WorkerStatsFile = {
          workerId,
          backend: backend.name,
          steps: p.steps,
          records: { [p.mode]: p.records },
          timers: timers.toJSON(),
          ...withDataPipeline(dataPipelineStats()),
          partial: true,
        };
        writeFileSync(path.join(statsDir, `${workerId}.json`), JSON.stringify(partial));
      }
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
        reader,
        ...(evaluation ? { evaluationReader: evaluation } : {}),
        ...(prediction ? { predictionReader: prediction } : {}),
        storageStats,
        dataPipelineStats,
        minibatchSize: values['minibatch-size'] ?? 64,
        getModelSteps: values['get-model-steps'] ?? 1,
        prefetch: values.prefetch ?? 2,
        pushAhead: PUSH_AHEAD[values['push-ahead'] ?? 'off'],
        mirrorUpdates: (values['mirror-updates'] ?? 'on') === 'on',
        allowNonFinite: values['allow-non-finite'] === true,
        ...(parameterServers === undefined ? {} : { parameterServers }),
        ...(parameterServers !== undefined &&
        (values['dense-on'] ?? process.env.EDL_DENSE_ON ?? 'master') === 'shards'
          ? { denseOnShards: placeDenseVariables }
          : {}),
        ...(statsDir ? { predictionOutput: path.join(statsDir, `${workerId}.predictions.jsonl`) } : {}),
        logger,
        onProgress,
        timers,
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
          ...withDataPipeline(dataPipelineStats()),
        };
        writeFileSync(path.join(statsDir, `${workerId}.json`), JSON.stringify(stats));
      }
      return result.jobError ? 1 : 0;
    } finally {
      client.close();
      parameterServers?.close();
      await Promise.all([training, evaluation, prediction].map((r) => r?.close?.()));
      // Dawn (webgpu) can keep handles open after the job; an unref'd timer exits only if it does.
      setTimeout(() => process.exit(), 2000).unref();
    }
  },
};
