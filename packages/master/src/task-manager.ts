import { checkInteger, checkNonEmptyString, checkOneOf, SeededRandom } from '@edl/common';
import type { Shard } from '@edl/data';
import {
  fatalTaskErrorCode,
  GradientStatus,
  type TaskAssignment,
  type TaskKind,
  TaskType,
  taskTypeOf,
} from '@edl/proto';
import { JobFailedError, type MasterErrorCode, MasterStateError } from './errors.js';
import { TaskQueue } from './task-queue.js';

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
      readonly kind?: Kind;
      readonly epoch?: number;
      readonly round?: number;
    }
  | {
      readonly type: 'task-completed';
      readonly taskId: number;
      readonly workerId: string;
      readonly kind: Kind;
      /** Records of the whole task. */
      readonly records: number;
      readonly epoch: number;
      readonly round: number;
    }
  | { readonly type: 'job-succeeded' }
  | { readonly type: 'job-failed'; readonly error: JobFailedError };

/** What a task of the queues is: any kind but `wait`, which is an answer, never a task. */
type Kind = Exclude<TaskKind, 'wait'>;

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
type Phase = TaskManagerPhase;

interface TaskRecord {
  readonly id: number;
  readonly kind: Kind;
  readonly shardName: string;
  /** First record of the task as created. */
  readonly start: number;
  readonly end: number;
  /** First record not yet applied: [start, progress) is done exactly once. */
  progress: number;
  readonly epoch: number;
  /** Evaluation tasks: the model version they evaluate. */
  readonly modelVersion: number;
  /** Evaluation tasks: the round they belong to. */
  readonly round: number;
  failures: number;
  readonly failureReasons: string[];
  worker?: string;
  leaseDeadline: number;
  /** Where the current dispatch started (progress at dispatch time). */
  dispatchedAt: number;
  /**
   * The worker reported the task done while some of its gradients were still on their way (a
   * prefetching pipeline consumes records before their minibatch is applied). Heartbeats no longer
   * renew the lease: the outstanding ranges must arrive within it, or the task comes back.
   */
  reportedDone?: boolean;
  /** Workers on which the task failed: it goes to another worker where one is alive. */
  failedOn?: Set<string>;
}

/** Outcome of a range check for a gradient or metrics report. */
export type RangeCheck =
  | {
      readonly ok: true;
      readonly taskId: number;
      readonly kind: Kind;
      readonly round: number;
      readonly modelVersion: number;
    }
  | { readonly ok: false; readonly status: GradientStatus; readonly progress: number };

/** Serializable state of a TaskManager, for checkpoints. */
export interface TaskManagerState {
  readonly format: 'edl-task-manager/1';
  readonly jobType: JobType;
  readonly phase: Phase;
  readonly epoch: number;
  readonly nextTaskId: number;
  readonly rngState: number;
  readonly dataFingerprint: string;
  readonly evaluationRound: number;
  readonly lastEvaluatedVersion: number;
  /** Unfinished tasks with their progress; tasks in flight at checkpoint time are among them. */
  readonly tasks: ReadonlyArray<{
    id: number;
    kind: Kind;
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
  readonly phase: Phase;
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

const WAIT_ASSIGNMENT_ID = 0;

/**
 * ElasticDL's dynamic-sharding task dispatcher, with record-level progress and exactly-once ranges.
 *
 * Shards are cut into tasks of `minibatchSize x numMinibatchesPerTask` records that never cross a
 * shard. Tasks wait in todo, are leased to a worker (doing), and advance only through
 * {@link advance}: the master calls it in the same synchronous step in which it applies a gradient
 * (or metric partial sums), so a range is applied once or not at all. A task that comes back
 * (failure, lost worker, expired lease) keeps its id and returns its remaining range only. A task
 * that fails `maxTaskFailures` times fails the job; nothing is dropped silently.
 */
export class TaskManager {
  readonly jobType: JobType;
  readonly numEpochs: number;
  readonly recordsPerTask: number;
  readonly leaseMs: number;
  readonly maxTaskFailures: number;
  readonly evaluationSteps: number;
  readonly #trainingShards: readonly Shard[];
  readonly #evaluationShards: readonly Shard[];
  readonly #predictionShards: readonly Shard[];
  readonly #shuffle: boolean;
  readonly #trainEndCallback: boolean;
  readonly #modelVersion: () => number;
  readonly #now: () => number;
  readonly #onEvent: (event: TaskManagerEvent) => void;
  #rng: SeededRandom;

  #phase: Phase;
  #epoch = 0;
  #nextTaskId = 1;
  readonly #todo = new TaskQueue<TaskRecord>();
  readonly #evalTodo = new TaskQueue<TaskRecord>();
  readonly #doing = new Map<number, TaskRecord>();
  readonly #byWorker = new Map<string, Set<number>>();
  /** Ids of tasks finished exactly once, so late duplicates are told ALREADY_APPLIED. */
  readonly #completed = new Set<number>();
  /** Unfinished evaluation tasks of the open round (todo + doing). */
  #evalOpen = 0;
  #evaluationRound = 0;
  #roundVersion = -1;
  #lastEvaluatedVersion = -1;
  #recordsDone = 0;
  readonly #doneByKind = { training: 0, evaluation: 0, prediction: 0 };
  /** When each worker last called getTask or heartbeat; dropped when it is lost. */
  readonly #lastSeen = new Map<string, number>();
  #started = false;
  /** Why the job failed: set with the phase 'failed', and only then. */
  #failed: JobFailedError | undefined;

  constructor(options: TaskManagerOptions) {
    this.jobType = checkOneOf(options.jobType, 'jobType', JOB_TYPES);
    const minibatchSize = checkInteger(options.minibatchSize ?? 64, 'minibatchSize', 1);
    const perTask = checkInteger(options.numMinibatchesPerTask ?? 8, 'numMinibatchesPerTask', 1);
    this.recordsPerTask = minibatchSize * perTask;
    this.numEpochs = checkInteger(options.numEpochs ?? 1, 'numEpochs', 1);
    this.leaseMs = checkInteger(options.leaseMs ?? 30_000, 'leaseMs', 1);
    this.maxTaskFailures = checkInteger(options.maxTaskFailures ?? 3, 'maxTaskFailures', 1);
    this.evaluationSteps = checkInteger(options.evaluationSteps ?? 0, 'evaluationSteps', 0);
    this.#trainingShards = checkShards(options.trainingShards ?? [], 'trainingShards');
    this.#evaluationShards = checkShards(options.evaluationShards ?? [], 'evaluationShards');
    this.#predictionShards = checkShards(options.predictionShards ?? [], 'predictionShards');
    const needs: Record<JobType, Array<[readonly Shard[], string]>> = {
      training: [[this.#trainingShards, 'trainingShards']],
      'training-with-evaluation': [
        [this.#trainingShards, 'trainingShards'],
        [this.#evaluationShards, 'evaluationShards'],
      ],
      evaluation: [[this.#evaluationShards, 'evaluationShards']],
      prediction: [[this.#predictionShards, 'predictionShards']],
    };
    for (const [shards, name] of needs[this.jobType]) {
      if (shards.length === 0) {
        throw new TypeError(
          `Expected at least one shard for ${name} but received none (job type ${this.jobType})`,
        );
      }
    }
    this.#shuffle = options.shuffle ?? false;
    this.#rng = new SeededRandom(checkInteger(options.seed ?? 0, 'seed', 0, 0xffffffff));
    this.#trainEndCallback = options.trainEndCallback ?? true;
    this.#modelVersion = options.modelVersion ?? (() => 0);
    this.#now = options.now ?? Date.now;
    this.#onEvent = options.onEvent ?? (() => {});
    this.#phase =
      this.jobType === 'evaluation'
        ? 'evaluation'
        : this.jobType === 'prediction'
          ? 'prediction'
          : 'training';
  }

  /** True once the job succeeded or failed. */
  get finished(): boolean {
    return this.#phase === 'done' || this.#phase === 'failed';
  }

  /** The error that failed the job, if it failed. */
  get error(): JobFailedError | undefined {
    return this.#failed;
  }

  /** Model version of the evaluation round in progress, or -1. */
  get evaluationVersion(): number {
    return this.#evalOpen > 0 ? this.#roundVersion : -1;
  }

  /** Identifies the data a checkpoint belongs to: shard names and sizes and the task size. */
  get dataFingerprint(): string {
    const part = (shards: readonly Shard[]) => shards.map((s) => `${s.name}:${s.start}+${s.count}`).join(',');
    return [
      this.jobType,
      this.recordsPerTask,
      part(this.#trainingShards),
      part(this.#evaluationShards),
      part(this.#predictionShards),
    ].join('|');
  }

  /**
   * The next task for `workerId`: an evaluation task first, then a training / prediction task, WAIT
   * when todo is empty but tasks are in flight, or `undefined` once the job is over.
   */
  getTask(workerId: string): TaskAssignment | undefined {
    checkNonEmptyString(workerId, 'workerId');
    this.#start();
    this.#lastSeen.set(workerId, this.#now());
    for (;;) {
      if (this.finished) return undefined;
      const record = this.#takeFor(this.#evalTodo, workerId) ?? this.#takeFor(this.#todo, workerId);
      if (record !== undefined) return this.#dispatch(record, workerId);
      if (this.#evalTodo.length + this.#todo.length > 0) return this.#waitAssignment();
      if (this.#doing.size > 0) return this.#waitAssignment();
      // Nothing to do and nothing in flight: the current phase is complete.
      this.#advancePhase();
    }
  }

  /**
   * Checks that `workerId` holds `taskId` and that `[start, end)` is the next unapplied range of it.
   * Pure: call {@link advance} after applying what the range produced, in the same synchronous step.
   */
  checkRange(workerId: string, taskId: number, start: number, end: number): RangeCheck {
    const record = this.#doing.get(taskId);
    // After a failure nothing more is applied: the job's state stays as it was when it failed.
    if (record === undefined || record.worker !== workerId || this.#phase === 'failed') {
      if (this.#completed.has(taskId))
        return { ok: false, status: GradientStatus.ALREADY_APPLIED, progress: -1 };
      return { ok: false, status: GradientStatus.TASK_NOT_HELD, progress: -1 };
    }
    if (
      !Number.isSafeInteger(start) ||
      !Number.isSafeInteger(end) ||
      start >= end ||
      start < record.start ||
      end > record.end
    ) {
      throw new RangeError(
        `Expected a non-empty range inside [${record.start}, ${record.end}) of task ${taskId} but received [${start}, ${end})`,
      );
    }
    record.leaseDeadline = this.#now() + this.leaseMs;
    if (end <= record.progress)
      return { ok: false, status: GradientStatus.ALREADY_APPLIED, progress: record.progress };
    if (start !== record.progress)
      return { ok: false, status: GradientStatus.OUT_OF_ORDER, progress: record.progress };
    return { ok: true, taskId, kind: record.kind, round: record.round, modelVersion: record.modelVersion };
  }

  /**
   * Marks records up to `end` of a task applied (after a successful {@link checkRange}). A task whose
   * last record is applied is finished at once: a worker dying before its final report loses nothing.
   */
  advance(taskId: number, end: number): { progress: number; completed: boolean } {
    const record = this.#doing.get(taskId);
    if (record === undefined) throw new MasterStateError('TASK_NOT_HELD', `Task ${taskId} is not in flight`);
    if (end <= record.progress || end > record.end) {
      throw new RangeError(
        `Expected a progress in (${record.progress}, ${record.end}] for task ${taskId} but received ${end}`,
      );
    }
    this.#count(record, end - record.progress);
    record.progress = end;
    if (record.progress === record.end) {
      this.#complete(record);
      return { progress: end, completed: true };
    }
    return { progress: end, completed: false };
  }

  /**
   * A worker's report that it finished (or failed) a task. `recordsDone` counts records from the
   * dispatched start and only matters for prediction tasks that failed part-way. Returns false when
   * the worker does not hold the task (its lease expired and it went to another worker).
   */
  reportTaskResult(workerId: string, taskId: number, recordsDone: number, error: string): boolean {
    const record = this.#doing.get(taskId);
    if (record === undefined || record.worker !== workerId)
      return this.#completed.has(taskId) && error === '';
    record.leaseDeadline = this.#now() + this.leaseMs;
    const simple = record.kind === 'prediction' || record.kind === 'train-end';
    if (error === '') {
      if (simple) {
        this.#count(record, record.end - record.progress);
        record.progress = record.end;
        this.#complete(record);
        return true;
      }
      if (record.progress === record.end) {
        this.#complete(record);
        return true;
      }
      // Gradients of the last minibatches may still be in flight: wait for them, up to the lease.
      record.reportedDone = true;
      return true;
    }
    if (record.kind === 'prediction' && recordsDone > 0) {
      const progress = Math.min(record.end, record.dispatchedAt + recordsDone);
      if (progress > record.progress) {
        this.#count(record, progress - record.progress);
        record.progress = progress;
      }
    }
    const fatal = fatalTaskErrorCode(error);
    if (fatal !== undefined) {
      // Retrying cannot help (the same records fail the same way): the job fails now, loudly. The
      // task still goes back to todo, so that a checkpoint of this state loses no records.
      this.fail(fatal, `Task ${record.id} failed on worker ${workerId}: ${error.slice(fatal.length + 2)}`);
      this.#recover(record, `failed: ${error}`, true);
      return true;
    }
    // The worker itself says the task failed while it processed it: always a failure.
    this.#recover(record, `failed: ${error}`, true);
    return true;
  }

  /** Renews the lease of every task `workerId` holds; returns how many it holds. */
  heartbeat(workerId: string): number {
    if (!this.finished) this.#lastSeen.set(workerId, this.#now());
    const ids = this.#byWorker.get(workerId);
    if (ids === undefined) return 0;
    const deadline = this.#now() + this.leaseMs;
    for (const id of ids) {
      const record = this.#doing.get(id);
      if (record !== undefined && record.reportedDone !== true) record.leaseDeadline = deadline;
    }
    return ids.size;
  }

  /**
   * Sends every task whose lease ran out back to todo; returns how many. As for a crashed worker
   * ({@link recoverWorker}), only the task the silent worker was processing, with nothing applied in
   * this dispatch, counts as a failure; a task reported done whose last ranges never came always does.
   */
  expireLeases(): number {
    const now = this.#now();
    let expired = 0;
    const blamed = new Set<number>();
    for (const ids of this.#byWorker.values()) {
      const id = this.#blamedTask(ids);
      if (id !== undefined) blamed.add(id);
    }
    for (const record of [...this.#doing.values()]) {
      if (record.leaseDeadline <= now && !this.finished) {
        expired++;
        const reason = record.reportedDone
          ? `reported done but records [${record.progress}, ${record.end}) were not applied within the lease of ${this.leaseMs} ms`
          : `lease of ${this.leaseMs} ms expired on worker ${record.worker}`;
        if (record.worker !== undefined) this.#lastSeen.delete(record.worker);
        this.#recover(record, reason, record.reportedDone === true || blamed.has(record.id));
      }
    }
    return expired;
  }

  /**
   * Sends back every task of a worker that is gone. `countAsFailure` is true for a crash and false
   * for a deliberate scale-down or preemption.
   *
   * A crash counts as a failure of one task at most: the one the worker was processing, with nothing
   * of it applied in this dispatch. A worker processes its tasks in dispatch order, so that is the
   * first task it holds that it has not reported done; the tasks behind it were only read ahead and
   * never started. A task that advanced in this dispatch was interrupted, not failed: a record that
   * crashes every worker stops the progress at itself, so its task fails from the next attempt on,
   * while random kills (preemption, OOM of a neighbour, an operator) almost never hit a task three
   * times before its first minibatch. Every other task goes back to the front of todo uncounted.
   */
  recoverWorker(workerId: string, reason: string, countAsFailure: boolean): number {
    const held = this.#byWorker.get(workerId) ?? new Set<number>();
    const blamed = countAsFailure ? this.#blamedTask(held) : undefined;
    const ids = [...held];
    this.#lastSeen.delete(workerId);
    // Uncounted ones first, so that a failing task that fails the job leaves the others in todo.
    for (const id of [...ids.filter((i) => i !== blamed), ...ids.filter((i) => i === blamed)]) {
      const record = this.#doing.get(id);
      if (record !== undefined && !this.finished) {
        const why =
          id === blamed || !countAsFailure
            ? reason
            : `${reason} (${record.progress > record.dispatchedAt ? 'interrupted after progress' : 'not started'}: not counted)`;
        this.#recover(record, why, id === blamed);
      }
    }
    return ids.length;
  }

  /** Tasks in flight with their progress (status pages, tests that kill workers mid-task). */
  inFlight(): Array<{
    taskId: number;
    workerId: string;
    kind: Kind;
    start: number;
    end: number;
    progress: number;
  }> {
    return [...this.#doing.values()].map((r) => ({
      taskId: r.id,
      workerId: r.worker ?? '',
      kind: r.kind,
      start: r.dispatchedAt,
      end: r.end,
      progress: r.progress,
    }));
  }

  /** Ids of the tasks a worker holds now. */
  tasksOf(workerId: string): number[] {
    return [...(this.#byWorker.get(workerId) ?? [])];
  }

  /**
   * Called after each new model version: starts an evaluation round of training-with-evaluation
   * jobs every `evaluationSteps` versions. Returns the round's version when one started.
   */
  onModelVersion(version: number): number | undefined {
    if (this.jobType !== 'training-with-evaluation' || this.evaluationSteps === 0 || this.finished)
      return undefined;
    if (version <= 0 || version % this.evaluationSteps !== 0 || version === this.#lastEvaluatedVersion)
      return undefined;
    if (this.#evalOpen > 0) {
      this.#onEvent({
        type: 'evaluation-skipped',
        modelVersion: version,
        reason: `the evaluation of version ${this.#roundVersion} is still running`,
      });
      return undefined;
    }
    this.#startEvaluation(version);
    return version;
  }

  /** Fails the job from outside (the instance manager gave up); idempotent. */
  fail(code: MasterErrorCode, message: string): void {
    this.#transition('failed', new JobFailedError(code, message));
  }

  status(): TaskManagerStatus {
    const total = (shards: readonly Shard[]) => shards.reduce((sum, s) => sum + s.count, 0);
    const training = this.jobType === 'training' || this.jobType === 'training-with-evaluation';
    const records: RecordsByKind<RecordCount> = {
      training: {
        done: this.#doneByKind.training,
        total: training ? total(this.#trainingShards) * this.numEpochs : 0,
      },
      evaluation: {
        done: this.#doneByKind.evaluation,
        total: total(this.#evaluationShards) * this.#evaluationRound,
      },
      prediction: {
        done: this.#doneByKind.prediction,
        total: this.jobType === 'prediction' ? total(this.#predictionShards) : 0,
      },
    };
    const main = training
      ? records.training
      : this.jobType === 'evaluation'
        ? records.evaluation
        : records.prediction;
    return {
      state: this.#phase === 'failed' ? 'failed' : this.#phase === 'done' ? 'succeeded' : 'running',
      ...(this.#failed ? { error: this.#failed } : {}),
      phase: this.#phase,
      epoch: this.#epoch,
      numEpochs: this.numEpochs,
      todoTasks: this.#todo.length + this.#evalTodo.length,
      doingTasks: this.#doing.size,
      recordsDone: main.done,
      recordsTotal: main.total,
      records,
    };
  }

  /** A plain JSON snapshot; tasks in flight are saved with their progress and come back as todo. */
  toJSON(): TaskManagerState {
    const tasks = [...this.#doing.values(), ...this.#evalTodo.toArray(), ...this.#todo.toArray()].map(
      (r) => ({
        id: r.id,
        kind: r.kind,
        shardName: r.shardName,
        start: r.start,
        end: r.end,
        progress: r.progress,
        epoch: r.epoch,
        modelVersion: r.modelVersion,
        round: r.round,
        failures: r.failures,
        ...(r.failureReasons.length > 0 ? { failureReasons: [...r.failureReasons] } : {}),
      }),
    );
    return {
      format: 'edl-task-manager/1',
      jobType: this.jobType,
      phase: this.#phase,
      epoch: this.#epoch,
      nextTaskId: this.#nextTaskId,
      rngState: this.#rng.state,
      dataFingerprint: this.dataFingerprint,
      evaluationRound: this.#evaluationRound,
      lastEvaluatedVersion: this.#lastEvaluatedVersion,
      tasks,
      recordsDone: this.#recordsDone,
      recordsDoneByKind: { ...this.#doneByKind },
      ...(this.#failed ? { failed: this.#failed.message, failedCode: this.#failed.code } : {}),
    };
  }

  /**
   * Restores a snapshot taken by {@link toJSON} into a fresh manager built with the same options.
   * Evaluation tasks are dropped: their round restarts on the restored model version, since partial
   * sums are not checkpointed.
   */
  restore(state: TaskManagerState): void {
    if (this.#started)
      throw new MasterStateError('ALREADY_STARTED', 'restore() must come before the first getTask()');
    if (state.format !== 'edl-task-manager/1') {
      throw new TypeError(
        `Expected task manager state format 'edl-task-manager/1' but received ${String(state.format)}`,
      );
    }
    if (state.dataFingerprint !== this.dataFingerprint) {
      throw new MasterStateError(
        'DATA_MISMATCH',
        `The checkpoint was made for other data or task sizes (${state.dataFingerprint}), not (${this.dataFingerprint})`,
      );
    }
    this.#started = true;
    this.#epoch = state.epoch;
    this.#nextTaskId = state.nextTaskId;
    this.#rng = new SeededRandom(state.rngState);
    this.#evaluationRound = state.evaluationRound;
    this.#lastEvaluatedVersion = state.lastEvaluatedVersion;
    this.#recordsDone = state.recordsDone;
    // Older checkpoints have no split: their count is taken as the job's main kind.
    const byKind = state.recordsDoneByKind ?? {
      training:
        this.jobType === 'training' || this.jobType === 'training-with-evaluation' ? state.recordsDone : 0,
      evaluation: this.jobType === 'evaluation' ? state.recordsDone : 0,
      prediction: this.jobType === 'prediction' ? state.recordsDone : 0,
    };
    this.#doneByKind.training = byKind.training;
    this.#doneByKind.evaluation = byKind.evaluation;
    this.#doneByKind.prediction = byKind.prediction;
    for (const t of state.tasks) {
      if (t.kind === 'evaluation') continue;
      this.#todo.push({
        ...t,
        failureReasons: [...(t.failureReasons ?? [])],
        leaseDeadline: 0,
        dispatchedAt: t.progress,
      });
    }
    if (state.phase === 'failed' || state.failed !== undefined) {
      this.#transition(
        'failed',
        new JobFailedError(state.failedCode ?? 'TASK_FAILED', state.failed ?? 'the job failed'),
        { restoring: true },
      );
    } else if (state.phase === 'final-evaluation') {
      // The final round's partial sums are gone: run it again once training tasks are done.
      this.#transition('training', undefined, { restoring: true });
      this.#lastEvaluatedVersion = -1;
    } else {
      this.#transition(state.phase, undefined, { restoring: true });
      if (state.phase === 'evaluation') this.#startEvaluation(this.#modelVersion());
    }
  }

  /**
   * The one place where the phase changes. A final phase ('done', 'failed') is never left: moving
   * from one is a no-op that returns false (so failing twice keeps the first failure). Entering one
   * tells the observer, except when a checkpoint is being restored (the job ended in another life).
   */
  #transition(to: 'failed', error: JobFailedError, options?: { restoring: boolean }): boolean;
  #transition(to: Exclude<Phase, 'failed'>, error?: undefined, options?: { restoring: boolean }): boolean;
  #transition(to: Phase, error?: JobFailedError, options?: { restoring: boolean }): boolean {
    if (this.finished) return false;
    this.#phase = to;
    this.#failed = to === 'failed' ? error : undefined;
    if (options?.restoring === true) return true;
    if (to === 'failed' && error !== undefined) this.#onEvent({ type: 'job-failed', error });
    else if (to === 'done') this.#onEvent({ type: 'job-succeeded' });
    return true;
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    if (this.#phase === 'training') this.#createEpoch(0);
    else if (this.#phase === 'evaluation') this.#startEvaluation(this.#modelVersion());
    else if (this.#phase === 'prediction')
      this.#createTasks(this.#predictionShards, 'prediction', 0, 0, 0, this.#todo);
  }

  #advancePhase(): void {
    switch (this.#phase) {
      case 'training':
        if (this.#epoch + 1 < this.numEpochs) {
          this.#createEpoch(this.#epoch + 1);
          return;
        }
        if (
          this.jobType === 'training-with-evaluation' &&
          this.#lastEvaluatedVersion !== this.#modelVersion()
        ) {
          this.#transition('final-evaluation');
          this.#startEvaluation(this.#modelVersion());
          return;
        }
        this.#enterTrainEnd();
        return;
      case 'final-evaluation':
        this.#enterTrainEnd();
        return;
      default:
        this.#finish();
    }
  }

  #enterTrainEnd(): void {
    if (!this.#trainEndCallback) {
      this.#finish();
      return;
    }
    this.#transition('train-end');
    this.#todo.push(this.#newRecord('train-end', '', 0, 0, this.#epoch, this.#modelVersion(), 0));
  }

  #finish(): void {
    this.#transition('done');
  }

  #createEpoch(epoch: number): void {
    this.#epoch = epoch;
    const { tasks, records } = this.#createTasks(this.#trainingShards, 'training', epoch, 0, 0, this.#todo);
    this.#onEvent({ type: 'epoch-started', epoch, tasks, records });
  }

  #startEvaluation(version: number): void {
    this.#evaluationRound++;
    this.#roundVersion = version;
    this.#lastEvaluatedVersion = version;
    const { tasks, records } = this.#createTasks(
      this.#evaluationShards,
      'evaluation',
      this.#epoch,
      version,
      this.#evaluationRound,
      this.#evalTodo,
    );
    this.#evalOpen = tasks;
    this.#onEvent({
      type: 'evaluation-started',
      round: this.#evaluationRound,
      modelVersion: version,
      tasks,
      records,
    });
  }

  #createTasks(
    shards: readonly Shard[],
    kind: Kind,
    epoch: number,
    modelVersion: number,
    round: number,
    queue: TaskQueue<TaskRecord>,
  ): { tasks: number; records: number } {
    const created: TaskRecord[] = [];
    let records = 0;
    for (const shard of shards) {
      const end = shard.start + shard.count;
      for (let start = shard.start; start < end; start += this.recordsPerTask) {
        created.push(
          this.#newRecord(
            kind,
            shard.name,
            start,
            Math.min(end, start + this.recordsPerTask),
            epoch,
            modelVersion,
            round,
          ),
        );
      }
      records += shard.count;
    }
    if (this.#shuffle && kind === 'training') this.#rng.shuffle(created);
    for (const record of created) queue.push(record);
    return { tasks: created.length, records };
  }

  #newRecord(
    kind: Kind,
    shardName: string,
    start: number,
    end: number,
    epoch: number,
    modelVersion: number,
    round: number,
  ): TaskRecord {
    return {
      id: this.#nextTaskId++,
      kind,
      shardName,
      start,
      end,
      progress: start,
      epoch,
      modelVersion,
      round,
      failures: 0,
      failureReasons: [],
      leaseDeadline: 0,
      dispatchedAt: start,
    };
  }

  #dispatch(record: TaskRecord, workerId: string): TaskAssignment {
    record.worker = workerId;
    record.leaseDeadline = this.#now() + this.leaseMs;
    record.dispatchedAt = record.progress;
    this.#doing.set(record.id, record);
    let ids = this.#byWorker.get(workerId);
    if (ids === undefined) {
      ids = new Set();
      this.#byWorker.set(workerId, ids);
    }
    ids.add(record.id);
    return {
      id: record.id,
      type: taskTypeOf(record.kind),
      shardName: record.shardName,
      start: record.progress,
      end: record.end,
      modelVersion: record.kind === 'evaluation' ? record.modelVersion : this.#modelVersion(),
      epoch: record.epoch,
      leaseMs: this.leaseMs,
      extendedConfig: record.kind === 'evaluation' ? { evaluationRound: String(record.round) } : {},
    };
  }

  #waitAssignment(): TaskAssignment {
    return {
      id: WAIT_ASSIGNMENT_ID,
      type: TaskType.WAIT,
      shardName: '',
      start: 0,
      end: 0,
      modelVersion: this.#modelVersion(),
      epoch: this.#epoch,
      leaseMs: this.leaseMs,
      extendedConfig: {},
    };
  }

  /**
   * The next task of `queue` for `workerId`: the first one that did not fail on this worker, or one
   * that did when no other worker has been seen within the lease (it must run somewhere).
   */
  #takeFor(queue: TaskQueue<TaskRecord>, workerId: string): TaskRecord | undefined {
    const skipped: TaskRecord[] = [];
    let found: TaskRecord | undefined;
    for (let record = queue.shift(); record !== undefined; record = queue.shift()) {
      if (record.failedOn?.has(workerId) !== true) {
        found = record;
        break;
      }
      skipped.push(record);
    }
    if (found === undefined && skipped.length > 0 && !this.#anotherWorkerAlive(workerId))
      found = skipped.shift();
    for (let i = skipped.length - 1; i >= 0; i--) queue.pushFront(skipped[i]!);
    return found;
  }

  #anotherWorkerAlive(workerId: string): boolean {
    const since = this.#now() - this.leaseMs;
    for (const [id, seen] of this.#lastSeen) if (id !== workerId && seen > since) return true;
    return false;
  }

  /**
   * Of the tasks a worker holds (in dispatch order), the one a crash is blamed on: the first not
   * reported done, if nothing of it was applied in this dispatch.
   */
  #blamedTask(ids: Iterable<number>): number | undefined {
    for (const id of ids) {
      const record = this.#doing.get(id);
      if (record === undefined || record.reportedDone === true) continue;
      return record.progress === record.dispatchedAt ? id : undefined;
    }
    return undefined;
  }

  #count(record: TaskRecord, records: number): void {
    this.#recordsDone += records;
    if (record.kind !== 'train-end') this.#doneByKind[record.kind] += records;
  }

  #release(record: TaskRecord): void {
    this.#doing.delete(record.id);
    delete record.reportedDone;
    if (record.worker !== undefined) {
      const ids = this.#byWorker.get(record.worker);
      ids?.delete(record.id);
      if (ids?.size === 0) this.#byWorker.delete(record.worker);
    }
    delete record.worker;
  }

  #complete(record: TaskRecord): void {
    const workerId = record.worker ?? '';
    this.#release(record);
    this.#completed.add(record.id);
    this.#onEvent({
      type: 'task-completed',
      taskId: record.id,
      workerId,
      kind: record.kind,
      records: record.end - record.start,
      epoch: record.epoch,
      round: record.round,
    });
    if (record.kind === 'evaluation') {
      this.#evalOpen--;
      if (this.#evalOpen === 0) {
        this.#onEvent({
          type: 'evaluation-completed',
          round: record.round,
          modelVersion: record.modelVersion,
        });
      }
    }
  }

  #recover(record: TaskRecord, reason: string, countAsFailure: boolean): void {
    const workerId = record.worker ?? '';
    this.#release(record);
    if (countAsFailure) {
      record.failures++;
      record.failureReasons.push(`worker ${workerId}: ${reason}`);
      record.failedOn ??= new Set();
      record.failedOn.add(workerId);
    }
    this.#onEvent({
      type: 'task-recovered',
      taskId: record.id,
      workerId,
      reason,
      remaining: record.end - record.progress,
      failures: record.failures,
      counted: countAsFailure,
      kind: record.kind,
      epoch: record.epoch,
      round: record.round,
    });
    if (record.failures >= this.maxTaskFailures) {
      const what =
        record.kind === 'train-end'
          ? 'the train-end callback task'
          : `${record.kind} records [${record.start}, ${record.end}) of '${record.shardName}' (epoch ${record.epoch})`;
      this.fail(
        'TASK_FAILED',
        `Task ${record.id} (${what}) failed ${record.failures} times, the limit (maxTaskFailures): ${record.failureReasons.join('; ')}`,
      );
      return;
    }
    if (record.kind === 'evaluation') this.#evalTodo.pushFront(record);
    else this.#todo.pushFront(record);
  }
}

function checkShards(shards: readonly Shard[], name: string): readonly Shard[] {
  if (!Array.isArray(shards))
    throw new TypeError(`Expected an array of shards for ${name} but received ${typeof shards}`);
  shards.forEach((shard, i) => {
    checkNonEmptyString(shard?.name, `${name}[${i}].name`);
    checkInteger(shard.start, `${name}[${i}].start`, 0);
    checkInteger(shard.count, `${name}[${i}].count`, 0);
  });
  return shards.map((s) => ({ name: s.name, start: s.start, count: s.count }));
}
