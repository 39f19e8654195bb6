import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
// Only what starting the workers needs is imported up front: the master, gRPC, TensorFlow.js and
// the readers load after the workers are spawned, while those start up on the other cores (a
// worker's own start-up is the longest wait before the first step).
import type { JobResult, MasterLogger, StartMasterOptions } from '@edl/master';
import { LocalInstanceManager } from '@edl/master/local-workers';
import type { TimersReport } from '@edl/worker';
import type { CommandIO } from '../command.js';
import { type JobOptions, jobTypeFor, workerArgs } from './job-options.js';
import { withFreeLoopbackPort } from './loopback-port.js';
import { resolveModelDef } from './model-def-path.js';
import { ProgressBar } from './progress.js';
import { recordsSummary } from './records-summary.js';
import { WORKER_NODE_FLAGS } from './worker-node-flags.js';

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
    loadModel: models.loadModel,
    openJobReaders: models.openJobReaders,
  };
}

type JobModules = Awaited<ReturnType<typeof loadJobModules>>;

/** What a worker process leaves in the stats directory when it ends. */
export interface WorkerStatsFile {
  readonly workerId: string;
  readonly backend: string;
  readonly steps: number;
  readonly records: Record<string, number>;
  readonly lastLoss?: number;
  readonly timers: TimersReport;
  /**
   * Written while the worker runs (about once a second) and replaced by the final file when it
   * ends: a file still partial after the job belongs to a worker that was lost (killed, crashed).
   */
  readonly partial?: boolean;
  /** Set by the job when it reads a partial file: the worker was lost before it ended. */
  readonly lost?: boolean;
}

/** What {@link runJob} hands back besides printing. */
export interface JobOutcome {
  readonly result: JobResult;
  readonly workers: readonly WorkerStatsFile[];
  readonly exitCode: number;
}

const DAWN_NOISE = /^Warning: maxDynamic\w+ artificially reduced/;

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
  // Where workers leave their timers and prediction outputs; removed whatever happens.
  const statsDir = await mkdtemp(path.join(tmpdir(), 'edl-stats-'));
  try {
    return await runJobIn(kind, options, io, statsDir);
  } finally {
    await rm(statsDir, { recursive: true, force: true });
  }
}

async function runJobIn(
  kind: 'train' | 'evaluate' | 'predict',
  options: JobOptions,
  io: CommandIO,
  statsDir: string,
): Promise<JobOutcome> {
  const jobType = jobTypeFor(kind, options);
  const modelDefPath = resolveModelDef(options.modelDef);
  const predictionOutput =
    kind === 'predict' ? path.resolve(options.output ?? 'predictions.jsonl') : undefined;
  const bar = io.isTTY && !options.quiet ? new ProgressBar(io.stderr) : undefined;
  const jobId = randomBytes(4).toString('hex');
  const token = randomBytes(32).toString('hex');
  let lastLoss: number | undefined;

  let workersMuted = false;
  /** Set once the job's modules are loaded; a worker's line before that is shown as it came. */
  let formatLine: ((line: string, color: boolean) => string) | undefined;
  const onOutput = (workerId: string, line: string) => {
    if (workersMuted) return;
    // Dawn's notice about its own limits, printed whenever the webgpu package probes an adapter.
    if (DAWN_NOISE.test(line)) return;
    let event: Record<string, unknown> | undefined;
    try {
      event = JSON.parse(line) as Record<string, unknown>;
    } catch {
      event = undefined;
    }
    if (event !== undefined && typeof event.loss === 'number') lastLoss = event.loss;
    if (bar !== undefined) {
      if (event === undefined) bar.log(`[${workerId}] ${line}`);
      else if (event.level === 'warn' || event.level === 'error' || event.msg === 'backend.selected') {
        bar.log(formatLine === undefined ? line : formatLine(line, true));
      }
      return;
    }
    io.stderr.write(event === undefined ? `[${workerId}] ${line}\n` : `${line}\n`);
  };

  // The workers start first, on a port chosen now: their start-up (TensorFlow.js, the backend, the
  // model) overlaps the master's (the model definition, the readers, sharding). They retry their
  // first call until the master listens. Should the port be taken before the master binds it, the
  // workers started for it go and everything starts again on another port.
  let modules: JobModules | undefined;
  let definition: Awaited<ReturnType<JobModules['loadModel']>> | undefined;
  const { handle, closeReaders, loaded } = await withFreeLoopbackPort(async (port) => {
    workersMuted = false;
    const localWorkers = new LocalInstanceManager({
      command: process.execPath,
      args: [...WORKER_NODE_FLAGS, edlBin(), 'worker', ...workerArgs(options, modelDefPath, statsDir)],
      numWorkers: options.numWorkers,
      maxRestarts: options.maxRestarts,
      onOutput,
      masterAddress: `127.0.0.1:${port}`,
      token,
      env: { EDL_JOB_ID: jobId },
    });
    await localWorkers.start();
    let close: (() => Promise<void>) | undefined;
    try {
      modules ??= await loadJobModules();
      formatLine = modules.formatPrettyLine;
      definition ??= await modules.loadModel(options.modelDef);
      const { close: closeJobReaders, ...readers } = await modules.openJobReaders(
        jobType,
        options,
        definition,
      );
      close = closeJobReaders;
      const masterOptions: StartMasterOptions = {
        ...modules.jobMasterOptions(options, jobType, definition.optimizer, modelDefPath),
        ...readers,
        logger: masterLogger(modules, io, bar, options, jobId),
        jobId,
        host: '127.0.0.1',
        port,
        token,
        localWorkers,
      };
      return {
        handle: await modules.startMaster(masterOptions),
        closeReaders: closeJobReaders,
        loaded: modules,
      };
    } catch (error) {
      // A model or data error found by the master: the workers started for it go at once, and what
      // they say of the same error is not repeated.
      workersMuted = true;
      await localWorkers.stop(0);
      await close?.().catch(() => {});
      throw error;
    }
  });
  if (handle.liveView !== undefined && !options.quiet) {
    const line = `live view: ${handle.liveView.url}`;
    if (bar !== undefined) bar.log(line);
    else io.stderr.write(`${line}\n`);
  }
  // Ctrl-C: stop the workers and the server cleanly; the job resumes from --checkpoint-dir.
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
  let result: JobResult | 'interrupted';
  try {
    result = await Promise.race([handle.wait(), stopped]);
  } finally {
    clearInterval(timer);
    process.removeListener('SIGINT', interrupt);
    bar?.clear();
    // The job has ended (or was interrupted): the live view goes with it.
    await handle.stop();
  }

  if (result === 'interrupted') {
    await closeReaders();
    return {
      result: { state: 'failed', modelVersion: handle.master.status().modelVersion, evaluations: [] },
      workers: [],
      exitCode: 130,
    };
  }
  const workers = readdirSync(statsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(path.join(statsDir, f), 'utf8')) as WorkerStatsFile)
    .map((w) => (w.partial ? { ...w, lost: true } : w));
  if (predictionOutput !== undefined) await mergePredictions(predictionOutput, statsDir);
  await closeReaders();

  for (const evaluation of result.evaluations) {
    const metrics = Object.entries(evaluation.metrics)
      .map(([name, value]) => `${name}=${value.toFixed(4)}`)
      .join(' ');
    io.stdout.write(
      `evaluation round ${evaluation.round} (model v${evaluation.modelVersion}, ${evaluation.records} records): ${metrics}\n`,
    );
  }
  if (predictionOutput !== undefined) io.stdout.write(`predictions written to ${predictionOutput}\n`);
  if (workers.length > 0) {
    const rows = workers.map((w) => ({
      label: w.lost ? `${w.workerId} (lost)` : w.workerId,
      totalSeconds: w.timers.totalSeconds,
      job: w.timers.job,
      gradients: w.timers.gradients ?? { computed: 0, wasted: 0 },
    }));
    if (rows.length > 1) {
      rows.push({
        label: 'all workers',
        totalSeconds: Math.max(...workers.map((w) => w.timers.totalSeconds)),
        job: loaded.sumTimerTotals(workers.map((w) => w.timers)),
        gradients: loaded.sumGradientComputations(workers.map((w) => w.timers)),
      });
    }
    io.stdout.write(
      `\nTiming (seconds; wall-clock spans, which overlap when the pipeline prefetches):\n${loaded.formatTimerTable(rows)}\n`,
    );
  }
  if (options.stats) {
    const status = handle.master.status();
    const records = recordsSummary(status);
    const summary = {
      state: result.state,
      modelVersion: result.modelVersion,
      records,
      // What the master did with the gradients: applied, refused as stale (computed again) or for their range.
      gradients: handle.master.gradientOutcomes,
      evaluations: result.evaluations,
      workers,
    };
    io.stdout.write(`${JSON.stringify(summary)}\n`);
  }
  if (result.state === 'succeeded') {
    io.stdout.write(
      `job ${result.state}: model v${result.modelVersion}${result.checkpoint ? `, checkpoint ${result.checkpoint}` : ''}\n`,
    );
    return { result, workers, exitCode: 0 };
  }
  io.stderr.write(
    `job failed: ${result.error ? `${result.error.code}: ${result.error.message}` : 'unknown error'}\n`,
  );
  return { result, workers, exitCode: 1 };
}

/** Concatenates the workers' prediction part files into `output`, ordered by shard and record. */
async function mergePredictions(output: string, statsDir: string): Promise<void> {
  const parts = readdirSync(statsDir).filter((f) => f.endsWith('.predictions.jsonl'));
  const lines: Array<{ shard: string; record: number; text: string }> = [];
  for (const part of parts) {
    for (const text of readFileSync(path.join(statsDir, part), 'utf8').split('\n')) {
      if (text === '') continue;
      const { shard, record } = JSON.parse(text) as { shard: string; record: number };
      lines.push({ shard, record, text });
    }
  }
  lines.sort((a, b) => (a.shard === b.shard ? a.record - b.record : a.shard < b.shard ? -1 : 1));
  await writeFile(output, '');
  if (lines.length > 0) await appendFile(output, `${lines.map((l) => l.text).join('\n')}\n`);
  if (!existsSync(output)) throw new Error(`could not write ${output}`);
}
