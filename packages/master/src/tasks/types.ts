// Public types of the task manager: job types, options, events, phases, status and range checks.
import type { Shard } from '@edl/data';
import type { GradientStatus, TaskKind } from '@edl/proto';
import type { JobFailedError } from '../errors.js';

/** ElasticDL's four job types. */
export type JobType = 'training' | 'training-with-evaluation' | 'evaluation' | 'prediction';
export const JOB_TYPES: readonly JobType[] = [
  'training',
  'training-with-evaluation',
  'evaluation',
  'prediction',
];

/** Options of {@link TaskManager}. */
export interface TaskManagerOptions {
  readonly jobType: JobType;
  /** Shards of the training data (training jobs). */
  readonly trainingShards?: readonly Shard[];
  /** Shards of the validation data (training-with-evaluation and evaluation jobs). */
  readonly evaluationShards?: readonly Shard[];
  /** Shards of the data to predict on (prediction jobs). */
  readonly predictionShards?: readonly Shard[];
  /** Records per minibatch (default 64). */
  readonly minibatchSize?: number;
  /** Minibatches per task (default 8): a task holds minibatchSize x this many records. */
  readonly numMinibatchesPerTask?: number;
  /** Training epochs (default 1). Epochs never overlap. */
  readonly numEpochs?: number;
  /** Shuffle the task order of each epoch (default false). */
  readonly shuffle?: boolean;
  /** Seed of the task shuffle (default 0). */
  readonly seed?: number;
  /** training-with-evaluation: evaluate every this many model versions (default 0: only at the end). */
  readonly evaluationSteps?: number;
  /** A worker must heartbeat or report within this many milliseconds (default 30,000). */
  readonly leaseMs?: number;
  /** A task that fails this many times fails the job (default 3). */
  readonly maxTaskFailures?: number;
  /** Dispatch one TRAIN_END_CALLBACK task after training (default true for training jobs). */
  readonly trainEndCallback?: boolean;
  /** The model version now (stamped on tasks; evaluation-only jobs evaluate it). Default: always 0. */
  readonly modelVersion?: () => number;
  /** Clock in milliseconds (tests inject one). Default: Date.now. */
  readonly now?: () => number;
  /** Observes what happens to the job (logging, metrics, the evaluation service). */
  readonly onEvent?: (event: TaskManagerEvent) => void;
}

/** What the task manager tells its observer. */
export type TaskManagerEvent =
  | {
      readonly type: 'epoch-started';
      readonly epoch: number;
      readonly tasks: number;
      readonly records: number;
    }
  | {
      readonly type: 'evaluation-started';
      readonly round: number;
      readonly modelVersion: number;
      readonly tasks: number;
      readonly records: number;
    }
  | { readonly type: 'evaluation-completed'; readonly round: number; readonly modelVersion: number }
  | { readonly type: 'evaluation-skipped'; readonly modelVersion: number; readonly reason: string }
  | {
      readonly type: 'task-recovered';
      readonly taskId: number;
      readonly workerId: string;
      readonly reason: string;
      readonly remaining: number;
      readonly failures: number;
      /** Whether this recovery counted as a failure of the task (see {@link TaskManager.recoverWorker}). */
      readonly counted: boolean;
      /** What the task is and where it belongs (for the live view's task counts). */
      readonly kind?: QueuedTaskKind;
      readonly epoch?: number;
      readonly round?: number;
    }
  | {
      readonly type: 'task-completed';
      readonly taskId: number;
      readonly workerId: string;
      readonly kind: QueuedTaskKind;
      /** Records of the whole task. */
      readonly records: number;
      readonly epoch: number;
      readonly round: number;
    }
  | { readonly type: 'job-succeeded' }
  | { readonly type: 'job-failed'; readonly error: JobFailedError };

/** What a task of the queues is: any kind but `wait`, which is an answer, never a task. */
export type QueuedTaskKind = Exclude<TaskKind, 'wait'>;

/**
 * Where the job is. `done` and `failed` are final; every change goes through one function
 * (`#transition`), which also tells the observer when the job ends.
 */
export type TaskManagerPhase =
  | 'training'
  | 'final-evaluation'
  | 'train-end'
  | 'evaluation'
  | 'prediction'
  | 'done'
  | 'failed';

/** Outcome of a range check for a gradient or metrics report. */
export type RangeCheck =
  | {
      readonly ok: true;
      readonly taskId: number;
      readonly kind: QueuedTaskKind;
      readonly round: number;
      readonly modelVersion: number;
    }
  | { readonly ok: false; readonly status: GradientStatus; readonly progress: number };

/** Records of each kind of task. */
export interface RecordsByKind<T> {
  readonly training: T;
  readonly evaluation: T;
  readonly prediction: T;
}

/** Records applied exactly once and records to apply in all, for one kind of task. */
export interface RecordCount {
  readonly done: number;
  readonly total: number;
}

/** Progress counters for status reports and progress bars. */
export interface TaskManagerStatus {
  readonly state: 'running' | 'succeeded' | 'failed';
  readonly error?: JobFailedError;
  /** The phase; 'failed' once the job failed (whatever it was doing then). */
  readonly phase: TaskManagerPhase;
  readonly epoch: number;
  readonly numEpochs: number;
  readonly todoTasks: number;
  readonly doingTasks: number;
  /**
   * Records of the job's main kind (training for training jobs, across epochs; evaluation for
   * evaluation jobs; prediction for prediction jobs) applied exactly once, and their total: `done`
   * never exceeds `total`. Evaluation records of training-with-evaluation jobs are in `records`.
   */
  readonly recordsDone: number;
  readonly recordsTotal: number;
  /**
   * `done` and `total` per kind. Evaluation counts every round started so far (a round reads the
   * validation data once); a kind the job does not run is 0 of 0.
   */
  readonly records: RecordsByKind<RecordCount>;
}
