import type { DenseUpdateRef } from './dense-shards-client.js';
import type { GradientStatus, MetricPartial } from './generated/edl/v1/master_pb.js';
import type { TaskAssignment } from './task-assignment.js';
import type { NamedTensor } from './tensor.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/** The master's optimizer at a model version, for a worker that mirrors its updates. */
export interface OptimizerSnapshot {
  /** The optimizer's type and parameters (`OptimizerConfig` of @edl/common), as the master sent them. */
  readonly config: Readonly<Record<string, unknown>>;
  /** Updates applied so far. */
  readonly step: number;
  /** Per-variable slots, each named `VARIABLE/SLOT` (Adam's `dense/kernel/m`). */
  readonly slots: NamedTensor[];
}

/** The model as a worker sees it. */
export interface ModelSnapshot {
  readonly version: number;
  /** False until some worker reported the initial variables. */
  readonly initialized: boolean;
  /** True when the master still has the version the caller holds: `variables` is then empty. */
  readonly unchanged?: boolean;
  readonly variables: NamedTensor[];
  /**
   * Asked for with `wantOptimizer`: the optimizer at `version`, when the master's updates can be
   * mirrored (each applies one gradient).
   */
  readonly optimizer?: OptimizerSnapshot;
}

/** A record range of a task. */
export interface TaskRangeRef {
  readonly taskId: number;
  readonly rangeStart: number;
  readonly rangeEnd: number;
}

/**
 * A gradient computed from records [rangeStart, rangeEnd) of a task on model `modelVersion`, as a
 * worker pushes it and as the master applies it. The gradient arrays are sent without a copy: do not
 * change them until `reportGradient` resolves.
 */
export interface GradientReport extends TaskRangeRef {
  readonly workerId: string;
  readonly modelVersion: number;
  readonly gradients: readonly NamedTensor[];
  /** Ranges of other tasks in the same minibatch (one per task); applied with the first or not at all. */
  readonly moreRanges?: readonly TaskRangeRef[];
  /** Ask for the model in the reply (ACCEPTED or STALE), saving the next step's pull. */
  readonly wantModel?: boolean;
  /**
   * The worker holds the master's model and optimizer at `modelVersion` and applies this gradient
   * to them itself: when the master applies it alone onto that version, the reply is `mirrored`
   * and carries no model.
   */
  readonly mirror?: boolean;
  /**
   * The worker holds the dense variables on the parameter-server shards (it sends no gradients
   * here): the reply names the update the step joins (`ReportResult.update`).
   */
  readonly wantUpdate?: boolean;
}

/** Metric partial sums computed from records [rangeStart, rangeEnd) of an evaluation task. */
export interface EvaluationMetricsReport extends TaskRangeRef {
  readonly workerId: string;
  readonly modelVersion: number;
  readonly metrics: Readonly<Record<string, MetricPartial>>;
  /** Ranges of other evaluation tasks in the same minibatch (one per task). */
  readonly moreRanges?: readonly TaskRangeRef[];
}

/** `moreRanges` -> wire messages. */
export function toRangeMessages(ranges: readonly TaskRangeRef[] | undefined) {
  return (ranges ?? []).map((r) => ({
    taskId: toWireInt(r.taskId, 'moreRanges.taskId'),
    rangeStart: toWireInt(r.rangeStart, 'moreRanges.rangeStart'),
    rangeEnd: toWireInt(r.rangeEnd, 'moreRanges.rangeEnd'),
  }));
}

/** Wire `moreRanges` -> ranges; a number past 2^53 is a RangeError naming the field. */
export function fromRangeMessages(
  ranges: readonly { taskId: bigint; rangeStart: bigint; rangeEnd: bigint }[],
): TaskRangeRef[] {
  return ranges.map((r) => ({
    taskId: toSafeNumber(r.taskId, 'moreRanges.taskId'),
    rangeStart: toSafeNumber(r.rangeStart, 'moreRanges.rangeStart'),
    rangeEnd: toSafeNumber(r.rangeEnd, 'moreRanges.rangeEnd'),
  }));
}

/** The end of a task as a worker reports it. */
export interface TaskResultReport {
  readonly workerId: string;
  readonly taskId: number;
  /** Records of the task consumed (authoritative for prediction and train-end tasks). */
  readonly recordsDone?: number;
  /** Set when the task failed; its remaining range goes back to todo. */
  readonly error?: string;
}

/** The answer to `getTask`. */
export interface GetTaskResult {
  /** Absent once the job is over (and then `jobFinished` is true). */
  readonly task?: TaskAssignment;
  readonly jobFinished: boolean;
  /** Why the job failed, when it did; empty otherwise. */
  readonly jobError: string;
}

/** The answer to `reportGradient` and `reportEvaluationMetrics`. */
export interface ReportResult {
  readonly status: GradientStatus;
  /** The model version after the report (gradients only; 0 for metrics). */
  readonly modelVersion: number;
  /** The task's progress after the report: its first record not yet applied. */
  readonly taskProgress: number;
  /** With `wantModel`: the variables at `modelVersion`, when the master sent them. */
  readonly variables?: NamedTensor[];
  /**
   * With `mirror`: true when the gradient was applied alone onto the version it was computed on
   * (the worker's own update of its replica is then the master's model at `modelVersion`).
   */
  readonly mirrored?: boolean;
  /** With `mirrored`: `modelChecksum` of the master's variables at `modelVersion`. */
  readonly modelChecksum?: number;
  /**
   * With `wantUpdate`: the update the gradient joined (ACCEPTED; ALREADY_APPLIED: the worker's last accepted one):
   * what a worker pushes its dense gradient to the parameter-server shards with.
   */
  readonly update?: DenseUpdateRef;
}

/** The job's progress, from `getJobStatus`. */
export interface JobStatusInfo {
  readonly state: 'running' | 'succeeded' | 'failed';
  readonly error: string;
  readonly epoch: number;
  readonly numEpochs: number;
  readonly modelVersion: number;
  readonly todoTasks: number;
  readonly doingTasks: number;
  readonly recordsDone: number;
  readonly recordsTotal: number;
  readonly numWorkers: number;
}
