// The task manager: the job's phases and the public API; its parts are in ./tasks/.
import { checkNonEmptyString } from '@edl/common';
import type { TaskAssignment } from '@edl/proto';
import { JobFailedError, type MasterErrorCode, MasterStateError } from './errors.js';
import { TaskQueue } from './task-queue.js';
import { EvaluationRounds } from './tasks/evaluation-rounds.js';
import { waitAssignment } from './tasks/leases.js';
import { mainKind, RecordCounter } from './tasks/progress.js';
import { dataFingerprint, resolveTaskManagerOptions, type TaskManagerSettings } from './tasks/settings.js';
import { TaskFactory, type TaskRecord } from './tasks/task-record.js';
import {
  checkRestorable,
  restoredFailure,
  restoredTask,
  savedTask,
  TASK_MANAGER_STATE_FORMAT,
  type TaskManagerState,
} from './tasks/task-state.js';
import { type InFlightTask, TaskTracker } from './tasks/task-tracker.js';
import type {
  JobType,
  RangeCheck,
  TaskManagerOptions,
  TaskManagerPhase,
  TaskManagerStatus,
} from './tasks/types.js';

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
  readonly #settings: TaskManagerSettings;
  readonly #factory: TaskFactory;
  readonly #tracker: TaskTracker;
  readonly #rounds = new EvaluationRounds();
  readonly #records = new RecordCounter();
  /** Training, prediction and train-end tasks waiting for a worker. */
  readonly #todo = new TaskQueue<TaskRecord>();
  #phase: TaskManagerPhase;
  #epoch = 0;
  #started = false;
  /** Why the job failed: set with the phase 'failed', and only then. */
  #failed: JobFailedError | undefined;

  constructor(options: TaskManagerOptions) {
    const settings = resolveTaskManagerOptions(options);
    this.#settings = settings;
    this.jobType = settings.jobType;
    this.numEpochs = settings.numEpochs;
    this.recordsPerTask = settings.recordsPerTask;
    this.leaseMs = settings.leaseMs;
    this.maxTaskFailures = settings.maxTaskFailures;
    this.evaluationSteps = settings.evaluationSteps;
    this.#factory = new TaskFactory(
      settings.shards,
      settings.recordsPerTask,
      settings.shuffle,
      settings.seed,
    );
    this.#tracker = new TaskTracker({
      settings,
      todo: this.#todo,
      rounds: this.#rounds,
      records: this.#records,
      job: this,
    });
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
    return this.#rounds.running ? this.#rounds.roundVersion : -1;
  }

  /** Identifies the data a checkpoint belongs to: shard names and sizes and the task size. */
  get dataFingerprint(): string {
    return dataFingerprint(this.jobType, this.recordsPerTask, this.#settings.shards);
  }

  /**
   * The next task for `workerId`: an evaluation task first, then a training / prediction task, WAIT
   * when todo is empty but tasks are in flight, or `undefined` once the job is over.
   */
  getTask(workerId: string): TaskAssignment | undefined {
    checkNonEmptyString(workerId, 'workerId');
    this.#start();
    this.#tracker.seen(workerId);
    for (;;) {
      if (this.finished) return undefined;
      const assignment = this.#tracker.dispatchTo(workerId);
      if (assignment !== undefined) return assignment;
      if (this.#tracker.busy) return waitAssignment(this.#settings.modelVersion(), this.#epoch, this.leaseMs);
      // Nothing to do and nothing in flight: the current phase is complete.
      this.#advancePhase();
    }
  }

  /**
   * Checks that `workerId` holds `taskId` and that `[start, end)` is the next unapplied range of it.
   * Pure: call {@link advance} after applying what the range produced, in the same synchronous step.
   */
  checkRange(workerId: string, taskId: number, start: number, end: number): RangeCheck {
    return this.#tracker.checkRange(workerId, taskId, start, end);
  }

  /**
   * Marks records up to `end` of a task applied (after a successful {@link checkRange}). A task whose
   * last record is applied is finished at once: a worker dying before its final report loses nothing.
   */
  advance(taskId: number, end: number): { progress: number; completed: boolean } {
    return this.#tracker.advance(taskId, end);
  }

  /**
   * A worker's report that it finished (or failed) a task. `recordsDone` counts records from the
   * dispatched start and only matters for prediction tasks that failed part-way. Returns false when
   * the worker does not hold the task (its lease expired and it went to another worker).
   */
  reportTaskResult(workerId: string, taskId: number, recordsDone: number, error: string): boolean {
    return this.#tracker.reportTaskResult(workerId, taskId, recordsDone, error);
  }

  /** Renews the lease of every task `workerId` holds; returns how many it holds. */
  heartbeat(workerId: string): number {
    return this.#tracker.heartbeat(workerId);
  }

  /**
   * Sends every task whose lease ran out back to todo; returns how many. As for a crashed worker
   * ({@link recoverWorker}), only the task the silent worker was processing, with nothing applied in
   * this dispatch, counts as a failure; a task reported done whose last ranges never came always does.
   */
  expireLeases(): number {
    return this.#tracker.expireLeases();
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
    return this.#tracker.recoverWorker(workerId, reason, countAsFailure);
  }

  /** Tasks in flight with their progress (status pages, tests that kill workers mid-task). */
  inFlight(): InFlightTask[] {
    return this.#tracker.inFlight();
  }

  /** Ids of the tasks a worker holds now. */
  tasksOf(workerId: string): number[] {
    return this.#tracker.tasksOf(workerId);
  }

  /**
   * Called after each new model version: starts an evaluation round of training-with-evaluation
   * jobs every `evaluationSteps` versions. Returns the round's version when one started.
   */
  onModelVersion(version: number): number | undefined {
    if (this.jobType !== 'training-with-evaluation' || this.evaluationSteps === 0 || this.finished)
      return undefined;
    if (!this.#rounds.dueAt(version, this.evaluationSteps)) return undefined;
    if (this.#rounds.running) {
      this.#settings.onEvent({
        type: 'evaluation-skipped',
        modelVersion: version,
        reason: `the evaluation of version ${this.#rounds.roundVersion} is still running`,
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

  /** Progress counters for status reports and progress bars. */
  status(): TaskManagerStatus {
    const records = this.#records.counts({
      jobType: this.jobType,
      shards: this.#settings.shards,
      numEpochs: this.numEpochs,
      evaluationRounds: this.#rounds.round,
    });
    const main = records[mainKind(this.jobType)];
    return {
      state: this.#phase === 'failed' ? 'failed' : this.#phase === 'done' ? 'succeeded' : 'running',
      ...(this.#failed ? { error: this.#failed } : {}),
      phase: this.#phase,
      epoch: this.#epoch,
      numEpochs: this.numEpochs,
      todoTasks: this.#todo.length + this.#rounds.todo.length,
      doingTasks: this.#tracker.doing,
      recordsDone: main.done,
      recordsTotal: main.total,
      records,
    };
  }

  /** A plain JSON snapshot; tasks in flight are saved with their progress and come back as todo. */
  toJSON(): TaskManagerState {
    const unfinished = [
      ...this.#tracker.inFlightRecords(),
      ...this.#rounds.todo.toArray(),
      ...this.#todo.toArray(),
    ];
    return {
      format: TASK_MANAGER_STATE_FORMAT,
      jobType: this.jobType,
      phase: this.#phase,
      epoch: this.#epoch,
      nextTaskId: this.#factory.nextTaskId,
      rngState: this.#factory.rngState,
      dataFingerprint: this.dataFingerprint,
      evaluationRound: this.#rounds.round,
      lastEvaluatedVersion: this.#rounds.lastEvaluatedVersion,
      tasks: unfinished.map(savedTask),
      recordsDone: this.#records.all,
      recordsDoneByKind: this.#records.byKind(),
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
    checkRestorable(state, this.dataFingerprint);
    this.#started = true;
    this.#epoch = state.epoch;
    this.#factory.restore(state.nextTaskId, state.rngState);
    this.#rounds.restore(state.evaluationRound, state.lastEvaluatedVersion);
    this.#records.restore(state.recordsDone, state.recordsDoneByKind, this.jobType);
    for (const task of state.tasks) if (task.kind !== 'evaluation') this.#todo.push(restoredTask(task));
    // Checkpoints written before 'failed' was a phase keep the phase the job failed in and the
    // message: either way the job restores as failed.
    if (state.phase === 'failed' || state.failed !== undefined) {
      this.#transition('failed', restoredFailure(state), { restoring: true });
    } else if (state.phase === 'final-evaluation') {
      // The final round's partial sums are gone: run it again once training tasks are done.
      this.#transition('training', undefined, { restoring: true });
      this.#rounds.forgetLastEvaluated();
    } else {
      this.#transition(state.phase, undefined, { restoring: true });
      if (state.phase === 'evaluation') this.#startEvaluation(this.#settings.modelVersion());
    }
  }

  /**
   * The one place where the phase changes. A final phase ('done', 'failed') is never left: moving
   * from one is a no-op that returns false (so failing twice keeps the first failure). Entering one
   * tells the observer, except when a checkpoint is being restored (the job ended in another life).
   */
  #transition(to: 'failed', error: JobFailedError, options?: { restoring: boolean }): boolean;
  #transition(
    to: Exclude<TaskManagerPhase, 'failed'>,
    error?: undefined,
    options?: { restoring: boolean },
  ): boolean;
  #transition(to: TaskManagerPhase, error?: JobFailedError, options?: { restoring: boolean }): boolean {
    if (this.finished) return false;
    this.#phase = to;
    this.#failed = to === 'failed' ? error : undefined;
    if (options?.restoring === true) return true;
    if (to === 'failed' && error !== undefined) this.#settings.onEvent({ type: 'job-failed', error });
    else if (to === 'done') this.#settings.onEvent({ type: 'job-succeeded' });
    return true;
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    if (this.#phase === 'training') this.#createEpoch(0);
    else if (this.#phase === 'evaluation') this.#startEvaluation(this.#settings.modelVersion());
    else if (this.#phase === 'prediction')
      this.#factory.cut('prediction', { epoch: 0, modelVersion: 0, round: 0 }, this.#todo);
  }

  /** Moves on once the current phase has nothing left: next epoch, final evaluation, train-end, done. */
  #advancePhase(): void {
    switch (this.#phase) {
      case 'training':
        if (this.#epoch + 1 < this.numEpochs) {
          this.#createEpoch(this.#epoch + 1);
          return;
        }
        if (
          this.jobType === 'training-with-evaluation' &&
          this.#rounds.lastEvaluatedVersion !== this.#settings.modelVersion()
        ) {
          this.#transition('final-evaluation');
          this.#startEvaluation(this.#settings.modelVersion());
          return;
        }
        this.#enterTrainEnd();
        return;
      case 'final-evaluation':
        this.#enterTrainEnd();
        return;
      default:
        this.#transition('done');
    }
  }

  #enterTrainEnd(): void {
    if (!this.#settings.trainEndCallback) {
      this.#transition('done');
      return;
    }
    this.#transition('train-end');
    const place = { epoch: this.#epoch, modelVersion: this.#settings.modelVersion(), round: 0 };
    this.#todo.push(this.#factory.create('train-end', '', 0, 0, place));
  }

  #createEpoch(epoch: number): void {
    this.#epoch = epoch;
    const { tasks, records } = this.#factory.cut(
      'training',
      { epoch, modelVersion: 0, round: 0 },
      this.#todo,
    );
    this.#settings.onEvent({ type: 'epoch-started', epoch, tasks, records });
  }

  #startEvaluation(version: number): void {
    const { round, tasks, records } = this.#rounds.open(version, this.#epoch, this.#factory);
    this.#settings.onEvent({ type: 'evaluation-started', round, modelVersion: version, tasks, records });
  }
}
