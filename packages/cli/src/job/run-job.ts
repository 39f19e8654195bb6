import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// Only what starting the workers needs is imported up front: the master, gRPC, TensorFlow.js and
// the readers load after the workers are spawned, while those start up on the other cores (a
// worker's own start-up is the longest wait before the first step).
import type { Shard } from '@edl/data';
import type { JobResult, MasterHandle, MasterLogger, StartMasterOptions } from '@edl/master';
import { LocalInstanceManager, LocalParameterServers } from '@edl/master/local-workers';
import { normalizeLocation } from '@edl/storage';
import type { CommandIO } from '../command.js';
import {
  type CheckpointShards,
  checkpointShardsOf,
  evaluationJobOptions,
  logShardsRestored,
  refuseEmbeddingsWithoutParts,
  shardRestorePoint,
} from './checkpoint-shards.js';
import { type JobOptions, jobTypeFor, workerArgs } from './job-options.js';
import { type JobOutcome, mergePredictions, readWorkerStats, reportJob } from './job-report.js';
import { withFreeLoopbackPort } from './loopback-port.js';
import { resolveModelDef } from './model-def-path.js';
import { ProgressBar } from './progress.js';
import { applyS3Options, s3Args } from './s3-options.js';
import { WORKER_NODE_FLAGS } from './worker-node-flags.js';
import { WorkerOutput } from './worker-output.js';

/** The modules of the master's side of a job, loaded once its workers are on their way. */
async function loadJobModules() {
  const [master, proto, worker, options, models] = await Promise.all([
    import('@edl/master'),
    import('@edl/proto'),
    import('@edl/worker'),
    import('./master-options.js'),
    import('./model-and-readers.js'),
  ]);
  return {
    createStreamLogger: master.createStreamLogger,
    startMaster: master.startMaster,
    createLogger: proto.createLogger,
    formatPrettyLine: proto.formatPrettyLine,
    formatTimerTable: worker.formatTimerTable,
    sumGradientComputations: worker.sumGradientComputations,
    sumTimerTotals: worker.sumTimerTotals,
    jobMasterOptions: options.jobMasterOptions,
    jobShardOptimizer: master.jobShardOptimizer,
    loadModel: models.loadModel,
    openJobReaders: models.openJobReaders,
  };
}

type JobModules = Awaited<ReturnType<typeof loadJobModules>>;

export type { JobOutcome, WorkerStatsFile } from './job-report.js';

/** The `edl` executable the workers run: this package's bin, compiled. */
function edlBin(): string {
  const here = fileURLToPath(import.meta.url);
  const bin = path.join(path.dirname(here), '..', 'bin', here.endsWith('.ts') ? 'edl.ts' : 'edl.js');
  if (here.endsWith('.ts')) {
    // Running from sources (tests): use the compiled CLI, which `pnpm build` produces.
    return fileURLToPath(new URL('../../dist/bin/edl.js', import.meta.url));
  }
  return bin;
}

/** The master's logger: readable lines above the progress bar on a terminal, JSON lines otherwise. */
function masterLogger(
  { createStreamLogger, createLogger, formatPrettyLine }: JobModules,
  io: CommandIO,
  bar: ProgressBar | undefined,
  options: JobOptions,
  jobId: string,
): MasterLogger {
  const settings = { level: options.logLevel, quiet: options.quiet, bindings: { job: jobId } };
  if (bar === undefined) return createStreamLogger(io.stderr, { ...settings, format: 'json' });
  const color = io.isTTY;
  return createLogger({
    ...settings,
    bindings: { source: 'master', ...settings.bindings },
    format: 'json',
    stream: { write: (line: string) => bar.log(formatPrettyLine(line.trimEnd(), color)) },
  });
}

/**
 * Runs a job end to end in this process: a master over gRPC on 127.0.0.1, `numWorkers` local
 * `edl worker` processes, progress (a bar on a terminal, JSON lines otherwise), and at the end the
 * evaluation metrics and the timing table (JSON too with `--stats`).
 */
export async function runJob(
  kind: 'train' | 'evaluate' | 'predict',
  options: JobOptions,
  io: CommandIO,
): Promise<JobOutcome> {
  await applyS3Options(options);
  // Where workers leave their timers and prediction outputs; removed whatever happens.
  const statsDir = await mkdtemp(path.join(tmpdir(), 'edl-stats-'));
  try {
    return await runJobIn(kind, options, io, statsDir);
  } finally {
    await rm(statsDir, { recursive: true, force: true });
  }
}

/** What every stage of one job reads: its settings, its identity, and where its output goes. */
interface JobRun {
  readonly options: JobOptions;
  readonly io: CommandIO;
  /** Where workers leave their timers and prediction outputs. */
  readonly statsDir: string;
  readonly jobType: ReturnType<typeof jobTypeFor>;
  readonly modelDefPath: string;
  readonly jobId: string;
  /** The secret the workers present to the master. */
  readonly token: string;
  /** The progress bar on a terminal, unless `--quiet`. */
  readonly bar: ProgressBar | undefined;
  readonly workerOutput: WorkerOutput;
  /** Evaluation and prediction: the `--model-checkpoint` whose shard parts the shards restore. */
  readonly modelCheckpoint: CheckpointShards | undefined;
}

/** What {@link startWorkersAndMaster} started. */
interface StartedJob {
  readonly handle: MasterHandle;
  readonly closeReaders: () => Promise<void>;
  readonly loaded: JobModules;
}

async function runJobIn(
  kind: 'train' | 'evaluate' | 'predict',
  given: JobOptions,
  io: CommandIO,
  statsDir: string,
): Promise<JobOutcome> {
  const jobType = jobTypeFor(kind, given);
  // A model trained with --num-ps: as many shards as the checkpoint's parts, unless --num-ps says.
  const modelCheckpoint = kind === 'train' ? undefined : await checkpointShardsOf(given);
  const options = evaluationJobOptions(given, modelCheckpoint);
  const modelDefPath = resolveModelDef(options.modelDef);
  const predictionOutput =
    kind === 'predict' ? normalizeLocation(options.output ?? 'predictions.jsonl') : undefined;
  const bar = io.isTTY && !options.quiet ? new ProgressBar(io.stderr) : undefined;
  const run: JobRun = {
    options,
    io,
    statsDir,
    jobType,
    modelDefPath,
    jobId: randomBytes(4).toString('hex'),
    token: randomBytes(32).toString('hex'),
    bar,
    workerOutput: new WorkerOutput(io, bar),
    modelCheckpoint,
  };
  const { handle, closeReaders, loaded } = await startWorkersAndMaster(run);
  announceLiveView(run, handle);
  const result = await waitForJobEnd(run, handle);
  if (result === 'interrupted') {
    await closeReaders();
    return {
      result: { state: 'failed', modelVersion: handle.master.status().modelVersion, evaluations: [] },
      workers: [],
      exitCode: 130,
    };
  }
  const workers = readWorkerStats(statsDir);
  if (predictionOutput !== undefined) await mergePredictions(predictionOutput, statsDir);
  await closeReaders();
  return reportJob(io, options, handle, result, workers, predictionOutput, loaded);
}

/**
 * Starts the workers, then the master. The workers start first, on a port chosen now: their
 * start-up (TensorFlow.js, the backend, the model) overlaps the master's (the model definition,
 * the readers, sharding). They retry their first call until the master listens. Should the port be
 * taken before the master binds it, the workers started for it go and everything starts again on
 * another port.
 */
async function startWorkersAndMaster(run: JobRun): Promise<StartedJob> {
  const { options, io, bar, jobId, token, jobType, modelDefPath, workerOutput } = run;
  let modules: JobModules | undefined;
  let definition: Awaited<ReturnType<JobModules['loadModel']>> | undefined;
  if (options.numPs > 0) {
    // The shards take the job's optimizer, which the model definition names: it loads before the
    // workers start (their start-up no longer overlaps it in a job with shards).
    modules = await loadJobModules();
    definition = await modules.loadModel(options.modelDef);
  }
  const trainingShards =
    modules === undefined || definition === undefined
      ? undefined
      : await shardsForDecay(run, modules, definition);
  return withFreeLoopbackPort(async (port) => {
    workerOutput.muted = false;
    const parameterServers =
      modules === undefined || definition === undefined
        ? undefined
        : localParameterServers(run, modules, definition.optimizer, trainingShards ?? []);
    const localWorkers = new LocalInstanceManager({
      command: process.execPath,
      args: [...WORKER_NODE_FLAGS, edlBin(), 'worker', ...workerArgs(options, modelDefPath, run.statsDir)],
      numWorkers: options.numWorkers,
      maxRestarts: options.maxRestarts,
      onOutput: workerOutput.onOutput,
      masterAddress: `127.0.0.1:${port}`,
      token,
      env: { EDL_JOB_ID: jobId },
      ...(parameterServers === undefined ? {} : { parameterServers }),
    });
    await localWorkers.start();
    let close: (() => Promise<void>) | undefined;
    try {
      modules ??= await loadJobModules();
      workerOutput.formatLine = modules.formatPrettyLine;
      definition ??= await modules.loadModel(options.modelDef);
      if (run.modelCheckpoint !== undefined)
        await refuseEmbeddingsWithoutParts(run.modelCheckpoint, definition);
      const { close: closeJobReaders, ...readers } = await modules.openJobReaders(
        jobType,
        options,
        definition,
      );
      close = closeJobReaders;
      const masterOptions: StartMasterOptions = {
        ...modules.jobMasterOptions(options, jobType, definition.optimizer, modelDefPath),
        ...readers,
        ...(trainingShards === undefined ? {} : { trainingShards }),
        logger: masterLogger(modules, io, bar, options, jobId),
        jobId,
        host: '127.0.0.1',
        port,
        token,
        localWorkers,
      };
      const handle = await modules.startMaster(masterOptions);
      // A shard that cannot start fails the job here, with its own words, not as workers' retries.
      await parameterServers?.ready().catch(async (error) => {
        await handle.stop();
        throw error;
      });
      logShardsRestored(handle.master.logger, run.modelCheckpoint);
      return { handle, closeReaders: closeJobReaders, loaded: modules };
    } catch (error) {
      // A model or data error found by the master: the workers started for it go at once, and what
      // they say of the same error is not repeated.
      workerOutput.muted = true;
      await localWorkers.stop(0);
      await close?.().catch(() => {});
      throw error;
    }
  });
}

/**
 * The training shards of a job with `--num-ps` and `--learning-rate-decay` without its steps: the
 * schedule spans the job's updates, which the shards fix, and the parameter-server shards take it
 * when they start, before the master. The data is sharded here once (the master takes these
 * shards too); undefined where no schedule needs it.
 */
async function shardsForDecay(
  run: JobRun,
  modules: JobModules,
  definition: Awaited<ReturnType<JobModules['loadModel']>>,
): Promise<Shard[] | undefined> {
  const decay = run.options.learningRateDecay;
  if (decay === undefined || decay.steps !== undefined || !run.jobType.startsWith('training'))
    return undefined;
  const { close, trainingReader } = await modules.openJobReaders(run.jobType, run.options, definition);
  try {
    return trainingReader === undefined ? undefined : await trainingReader.createShards();
  } finally {
    await close();
  }
}

/**
 * The `--num-ps` shards of a job: `edl ps` processes with the job's token, optimizer (the one the
 * master applies to dense variables, with the job's learning-rate schedule over `trainingShards`)
 * and seed; their lines go where the workers' go.
 */
function localParameterServers(
  run: JobRun,
  modules: JobModules,
  optimizer: Parameters<JobModules['jobMasterOptions']>[2],
  trainingShards: readonly Shard[],
): LocalParameterServers {
  const { options, token, modelDefPath, workerOutput, io, bar } = run;
  // The optimizer as the master's store takes it: the model definition's, under --learning-rate.
  const masterOptions = modules.jobMasterOptions(options, run.jobType, optimizer, modelDefPath);
  if (masterOptions.parameterStore?.optimizer === undefined)
    throw new Error('The job has no optimizer for its parameter-server shards');
  const jobOptimizer = modules.jobShardOptimizer(masterOptions, trainingShards);
  const servers = new LocalParameterServers({
    numShards: options.numPs,
    // The shards write their checkpoint parts to the same store as the master.
    args: [edlBin(), 'ps', ...s3Args(options)],
    optimizer: jobOptimizer,
    seed: options.seed,
    token,
    maxRestarts: options.maxRestarts,
    onOutput: workerOutput.onOutput,
    onWarning: (message) => {
      const line = `warning: ${message}`;
      if (bar !== undefined) bar.log(line);
      else io.stderr.write(`${line}\n`);
    },
  });
  // Evaluation and prediction: every shard, relaunched ones too, starts from the checkpoint's cut.
  const restored = run.modelCheckpoint;
  if (restored !== undefined) servers.setRestorePoint(shardRestorePoint(restored));
  return servers;
}

/** Prints the live view's address, unless `--quiet`. */
function announceLiveView({ options, io, bar }: JobRun, handle: MasterHandle): void {
  if (handle.liveView === undefined || options.quiet) return;
  const line = `live view: ${handle.liveView.url}`;
  if (bar !== undefined) bar.log(line);
  else io.stderr.write(`${line}\n`);
}

/**
 * Waits for the job to end, updating the progress bar meanwhile; Ctrl-C stops the workers and the
 * server cleanly ('interrupted': the job resumes from --checkpoint-dir). The master is stopped
 * either way.
 */
async function waitForJobEnd(run: JobRun, handle: MasterHandle): Promise<JobResult | 'interrupted'> {
  const { io, bar, jobType, workerOutput } = run;
  let interrupted: (() => void) | undefined;
  const stopped = new Promise<'interrupted'>((resolve) => {
    interrupted = () => resolve('interrupted');
  });
  const interrupt = () => {
    io.stderr.write('\ninterrupted: stopping the workers (a job with --checkpoint-dir resumes from there)\n');
    void handle.stop().then(interrupted);
  };
  process.once('SIGINT', interrupt);
  const timer = setInterval(
    () => {
      const status = handle.master.status();
      const lastLoss = workerOutput.lastLoss;
      const state = {
        phase: status.phase,
        epoch: status.epoch,
        numEpochs: jobType.startsWith('training') ? status.numEpochs : 0,
        recordsDone: status.recordsDone,
        recordsTotal: status.recordsTotal,
        ...(lastLoss === undefined ? {} : { loss: lastLoss }),
        modelVersion: status.modelVersion,
      };
      if (bar !== undefined) bar.update(state);
    },
    bar === undefined ? 5000 : 250,
  );
  timer.unref();
  try {
    return await Promise.race([handle.wait(), stopped]);
  } finally {
    clearInterval(timer);
    process.removeListener('SIGINT', interrupt);
    bar?.clear();
    // The job has ended (or was interrupted): the live view goes with it.
    await handle.stop();
  }
}
