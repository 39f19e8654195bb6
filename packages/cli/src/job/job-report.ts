import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { JobResult, MasterHandle } from '@edl/master';
import type { DataPipelineReport } from '@edl/proto';
import { putObject } from '@edl/storage';
import type * as WorkerModule from '@edl/worker';
import type { TimersReport } from '@edl/worker';
import type { CommandIO } from '../command.js';
import type { JobOptions } from './job-options.js';
import { recordsSummary } from './records-summary.js';

/** What a worker process leaves in the stats directory when it ends. */
export interface WorkerStatsFile {
  readonly workerId: string;
  readonly backend: string;
  readonly steps: number;
  readonly records: Record<string, number>;
  readonly lastLoss?: number;
  readonly timers: TimersReport;
  /** The tuner of the worker's `'auto'` data pipeline stages: budgets, settings, measured rates. */
  readonly dataPipeline?: DataPipelineReport;
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

/** The timer-table functions of @edl/worker, loaded with the job's other modules. */
export type TimerTableFunctions = Pick<
  typeof WorkerModule,
  'formatTimerTable' | 'sumGradientComputations' | 'sumTimerTotals'
>;

/** The stats files the workers left in `statsDir`, in name order; a partial one marks a lost worker. */
export function readWorkerStats(statsDir: string): WorkerStatsFile[] {
  return readdirSync(statsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => JSON.parse(readFileSync(path.join(statsDir, f), 'utf8')) as WorkerStatsFile)
    .map((w) => (w.partial ? { ...w, lost: true } : w));
}

/**
 * Prints what a finished job did: the evaluation rounds, where predictions went, the workers'
 * timing table, the JSON summary with `--stats`, and the job's end; returns the outcome.
 */
export function reportJob(
  io: CommandIO,
  options: JobOptions,
  handle: MasterHandle,
  result: JobResult,
  workers: readonly WorkerStatsFile[],
  predictionOutput: string | undefined,
  timerTable: TimerTableFunctions,
): JobOutcome {
  for (const evaluation of result.evaluations) {
    const metrics = Object.entries(evaluation.metrics)
      .map(([name, value]) => `${name}=${value.toFixed(4)}`)
      .join(' ');
    io.stdout.write(
      `evaluation round ${evaluation.round} (model v${evaluation.modelVersion}, ${evaluation.records} records): ${metrics}\n`,
    );
  }
  if (predictionOutput !== undefined) io.stdout.write(`predictions written to ${predictionOutput}\n`);
  if (workers.length > 0) writeTimingTable(io, workers, timerTable);
  if (options.stats) {
    const status = handle.master.status();
    const records = recordsSummary(status);
    const summary = {
      state: result.state,
      modelVersion: result.modelVersion,
      records,
      // What the master did with the gradients: applied, refused as stale (computed again) or for their range.
      gradients: handle.master.gradientOutcomes,
      // Roll-backs to the last cut (a shard relaunched, a worker lost with its rows push missing):
      // their records were trained again.
      ...(handle.master.rollBacks.length > 0 ? { rollBacks: handle.master.rollBacks } : {}),
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

/** One row per worker, and with several, one for all of them. */
function writeTimingTable(
  io: CommandIO,
  workers: readonly WorkerStatsFile[],
  timerTable: TimerTableFunctions,
): void {
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
      job: timerTable.sumTimerTotals(workers.map((w) => w.timers)),
      gradients: timerTable.sumGradientComputations(workers.map((w) => w.timers)),
    });
  }
  io.stdout.write(
    `\nTiming (seconds; wall-clock spans, which overlap when the pipeline prefetches):\n${timerTable.formatTimerTable(rows)}\n`,
  );
}

/**
 * Concatenates the workers' prediction part files into `output` (a path, or `s3://bucket/key`),
 * ordered by shard and record, committed whole: a failed job or upload leaves no partial file or
 * object.
 */
export async function mergePredictions(output: string, statsDir: string): Promise<void> {
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
  const text = lines.length === 0 ? '' : `${lines.map((l) => l.text).join('\n')}\n`;
  await putObject(output, Buffer.from(text, 'utf8'));
}
