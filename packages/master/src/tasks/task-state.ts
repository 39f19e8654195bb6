// Checkpoint state of the task manager: its shape, and the conversions of tasks to and from it.
import { JobFailedError, type MasterErrorCode, MasterStateError } from '../errors.js';
import type { TaskRecord } from './task-record.js';
import type { JobType, QueuedTaskKind, RecordsByKind, TaskManagerPhase } from './types.js';

/** The format tag of {@link TaskManagerState}. */
export const TASK_MANAGER_STATE_FORMAT = 'edl-task-manager/1';

/** Serializable state of a TaskManager, for checkpoints. */
export interface TaskManagerState {
  readonly format: typeof TASK_MANAGER_STATE_FORMAT;
  readonly jobType: JobType;
  readonly phase: TaskManagerPhase;
  readonly epoch: number;
  readonly nextTaskId: number;
  readonly rngState: number;
  readonly dataFingerprint: string;
  readonly evaluationRound: number;
  readonly lastEvaluatedVersion: number;
  /** Unfinished tasks with their progress; tasks in flight at checkpoint time are among them. */
  readonly tasks: ReadonlyArray<{
    id: number;
    kind: QueuedTaskKind;
    shardName: string;
    start: number;
    end: number;
    progress: number;
    epoch: number;
    modelVersion: number;
    round: number;
    failures: number;
    /** Why each counted failure happened (absent in checkpoints written before them). */
    failureReasons?: string[];
  }>;
  /** Records applied exactly once, every kind together (training across epochs, evaluation, prediction). */
  readonly recordsDone: number;
  /** The same per kind (added in issue 15; absent in older checkpoints). */
  readonly recordsDoneByKind?: RecordsByKind<number>;
  /**
   * Why the job failed, in the phase 'failed'. Checkpoints written before 'failed' was a phase keep
   * the phase the job failed in and this message: either way the job restores as failed.
   */
  readonly failed?: string;
  /** The failure's stable code (added in issue 15; older checkpoints: TASK_FAILED). */
  readonly failedCode?: MasterErrorCode;
}

/** One task as a checkpoint saves it. */
export type SavedTask = TaskManagerState['tasks'][number];

/** `record` as a checkpoint saves it: where it is, with its progress and failures. */
export function savedTask(record: TaskRecord): SavedTask {
  return {
    id: record.id,
    kind: record.kind,
    shardName: record.shardName,
    start: record.start,
    end: record.end,
    progress: record.progress,
    epoch: record.epoch,
    modelVersion: record.modelVersion,
    round: record.round,
    failures: record.failures,
    ...(record.failureReasons.length > 0 ? { failureReasons: [...record.failureReasons] } : {}),
  };
}

/** A saved task back as a task waiting in todo, to resume from its progress. */
export function restoredTask(task: SavedTask): TaskRecord {
  return {
    ...task,
    failureReasons: [...(task.failureReasons ?? [])],
    leaseDeadline: 0,
    dispatchedAt: task.progress,
  };
}

/** Throws unless `state` is a task manager's checkpoint of the data this manager reads. */
export function checkRestorable(state: TaskManagerState, dataFingerprint: string): void {
  if (state.format !== TASK_MANAGER_STATE_FORMAT) {
    throw new TypeError(
      `Expected task manager state format '${TASK_MANAGER_STATE_FORMAT}' but received ${String(state.format)}`,
    );
  }
  if (state.dataFingerprint !== dataFingerprint) {
    throw new MasterStateError(
      'DATA_MISMATCH',
      `The checkpoint was made for other data or task sizes (${state.dataFingerprint}), not (${dataFingerprint})`,
    );
  }
}

/** The error of a checkpointed job that failed (phase 'failed', or the older `failed` message). */
export function restoredFailure(state: TaskManagerState): JobFailedError {
  return new JobFailedError(state.failedCode ?? 'TASK_FAILED', state.failed ?? 'the job failed');
}
