// Record-level progress: range checks against a task's progress, and the counts of records applied.
import type { Shard } from '@edl/data';
import { GradientStatus } from '@edl/proto';
import { recordsIn, trains } from './settings.js';
import type { TaskRecord } from './task-record.js';
import type { JobType, QueuedTaskKind, RangeCheck, RecordCount, RecordsByKind } from './types.js';

/** The answer for a range of a task the worker does not hold: finished already, or not its own. */
export function notHeld(completed: boolean): RangeCheck {
  if (completed) return { ok: false, status: GradientStatus.ALREADY_APPLIED, progress: -1 };
  return { ok: false, status: GradientStatus.TASK_NOT_HELD, progress: -1 };
}

/** Throws unless `[start, end)` is a non-empty range inside the task. */
export function checkRangeInside(record: TaskRecord, start: number, end: number): void {
  if (
    !Number.isSafeInteger(start) ||
    !Number.isSafeInteger(end) ||
    start >= end ||
    start < record.start ||
    end > record.end
  ) {
    throw new RangeError(
      `Expected a non-empty range inside [${record.start}, ${record.end}) of task ${record.id} but received [${start}, ${end})`,
    );
  }
}

/** Whether `[start, end)` is the next unapplied range of a task the worker holds. */
export function rangeOutcome(record: TaskRecord, start: number, end: number): RangeCheck {
  if (end <= record.progress)
    return { ok: false, status: GradientStatus.ALREADY_APPLIED, progress: record.progress };
  if (start !== record.progress)
    return { ok: false, status: GradientStatus.OUT_OF_ORDER, progress: record.progress };
  return {
    ok: true,
    taskId: record.id,
    kind: record.kind,
    round: record.round,
    modelVersion: record.modelVersion,
  };
}

/** What the job will have read in all, per kind, for the status. */
export interface RecordTotals {
  readonly jobType: JobType;
  readonly shards: RecordsByKind<readonly Shard[]>;
  readonly numEpochs: number;
  /** Evaluation rounds started so far: each reads the validation data once. */
  readonly evaluationRounds: number;
}

/** Records applied exactly once: all kinds together and per kind. */
export class RecordCounter {
  #all = 0;
  readonly #byKind = { training: 0, evaluation: 0, prediction: 0 };

  /** Records applied exactly once, every kind together (training across epochs, evaluation, prediction). */
  get all(): number {
    return this.#all;
  }

  /** The same per kind (a copy). */
  byKind(): RecordsByKind<number> {
    return { ...this.#byKind };
  }

  /** Counts `records` more of `record`'s kind applied, and moves its progress past them. */
  apply(record: TaskRecord, progress: number): void {
    const records = progress - record.progress;
    this.#all += records;
    if (record.kind !== 'train-end') this.#byKind[record.kind] += records;
    record.progress = progress;
  }

  /**
   * Continues the counts of a checkpoint. Older checkpoints have no split: their count is taken as
   * the job's main kind.
   */
  restore(all: number, byKind: RecordsByKind<number> | undefined, jobType: JobType): void {
    this.#all = all;
    const split = byKind ?? {
      training: trains(jobType) ? all : 0,
      evaluation: jobType === 'evaluation' ? all : 0,
      prediction: jobType === 'prediction' ? all : 0,
    };
    this.#byKind.training = split.training;
    this.#byKind.evaluation = split.evaluation;
    this.#byKind.prediction = split.prediction;
  }

  /** Done and total per kind; a kind the job does not run is 0 of 0. */
  counts(totals: RecordTotals): RecordsByKind<RecordCount> {
    const training = trains(totals.jobType);
    return {
      training: {
        done: this.#byKind.training,
        total: training ? recordsIn(totals.shards.training) * totals.numEpochs : 0,
      },
      evaluation: {
        done: this.#byKind.evaluation,
        total: recordsIn(totals.shards.evaluation) * totals.evaluationRounds,
      },
      prediction: {
        done: this.#byKind.prediction,
        total: totals.jobType === 'prediction' ? recordsIn(totals.shards.prediction) : 0,
      },
    };
  }
}

/** The kind of record a job is about: what its status's `recordsDone` and `recordsTotal` count. */
export function mainKind(jobType: JobType): Exclude<QueuedTaskKind, 'train-end'> {
  if (trains(jobType)) return 'training';
  return jobType === 'evaluation' ? 'evaluation' : 'prediction';
}
