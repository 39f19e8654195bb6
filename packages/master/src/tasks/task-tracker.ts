// Tasks in flight: dispatch, record-level progress, completion and recovery of lost or failed tasks.
import { fatalTaskErrorCode, type TaskAssignment } from '@edl/proto';
import { type JobFailedError, type MasterErrorCode, MasterStateError } from '../errors.js';
import type { TaskQueue } from '../task-queue.js';
import type { EvaluationRounds } from './evaluation-rounds.js';
import {
  blamedTask,
  countFailure,
  expiryReason,
  failureLimitMessage,
  lostWorkerReason,
  recoveredEvent,
  recoveryOrder,
} from './failure-accounting.js';
import { assignmentOf, LeaseTable } from './leases.js';
import { checkRangeInside, notHeld, type RecordCounter, rangeOutcome } from './progress.js';
import type { TaskManagerSettings } from './settings.js';
import type { TaskRecord } from './task-record.js';
import type { QueuedTaskKind, RangeCheck } from './types.js';

/** What the tracker needs of the job: whether it is over, and a way to fail it. */
export interface JobControl {
  readonly finished: boolean;
  /** Set once the job failed, and only then. */
  readonly error: JobFailedError | undefined;
  fail(code: MasterErrorCode, message: string): void;
}

/** The parts a {@link TaskTracker} works on; the task manager owns them and fills the queues. */
export interface TaskTrackerParts {
  readonly settings: TaskManagerSettings;
  readonly records: RecordCounter;
  /** Training, prediction and train-end tasks waiting for a worker. */
  readonly todo: TaskQueue<TaskRecord>;
  readonly rounds: EvaluationRounds;
  readonly job: JobControl;
}

/** A task in flight as status pages see it. */
export interface InFlightTask {
  readonly taskId: number;
  readonly workerId: string;
  readonly kind: QueuedTaskKind;
  readonly start: number;
  readonly end: number;
  readonly progress: number;
}

/**
 * Follows each task from its dispatch to its completion or its return to todo. The task manager's
 * methods of the same names are the documented API; this is where they happen, apart from the
 * phases of the job.
 */
export class TaskTracker {
  readonly #settings: TaskManagerSettings;
  readonly #leases: LeaseTable;
  readonly #records: RecordCounter;
  readonly #todo: TaskQueue<TaskRecord>;
  readonly #rounds: EvaluationRounds;
  readonly #job: JobControl;

  constructor(parts: TaskTrackerParts) {
    this.#settings = parts.settings;
    this.#leases = new LeaseTable(parts.settings.leaseMs, parts.settings.now);
    this.#records = parts.records;
    this.#todo = parts.todo;
    this.#rounds = parts.rounds;
    this.#job = parts.job;
  }

  /** Tasks in flight. */
  get doing(): number {
    return this.#leases.size;
  }

  /** Whether tasks wait in a queue or are in flight. */
  get busy(): boolean {
    return this.#rounds.todo.length + this.#todo.length > 0 || this.#leases.size > 0;
  }

  /** The task records in flight, in dispatch order (checkpoints save them with their progress). */
  inFlightRecords(): TaskRecord[] {
    return this.#leases.inFlight();
  }

  /** Notes that `workerId` asked for a task now. */
  seen(workerId: string): void {
    this.#leases.seen(workerId);
  }

  /** Leases `workerId` the next task it may run (evaluation first); undefined when none is queued for it. */
  dispatchTo(workerId: string): TaskAssignment | undefined {
    const record =
      this.#leases.takeFor(this.#rounds.todo, workerId) ?? this.#leases.takeFor(this.#todo, workerId);
    if (record === undefined) return undefined;
    this.#leases.lease(record, workerId);
    return assignmentOf(record, this.#settings.modelVersion, this.#settings.leaseMs);
  }

  /** Checks a reported range against the task's holder and progress (see TaskManager.checkRange). */
  checkRange(workerId: string, taskId: number, start: number, end: number): RangeCheck {
    const record = this.#leases.get(taskId);
    // After a failure nothing more is applied: the job's state stays as it was when it failed.
    if (record === undefined || record.worker !== workerId || this.#job.error !== undefined)
      return notHeld(this.#leases.completed(taskId));
    checkRangeInside(record, start, end);
    this.#leases.renew(record);
    return rangeOutcome(record, start, end);
  }

  /** Marks records up to `end` applied; completes the task at its last record. */
  advance(taskId: number, end: number): { progress: number; completed: boolean } {
    const record = this.#leases.get(taskId);
    if (record === undefined) throw new MasterStateError('TASK_NOT_HELD', `Task ${taskId} is not in flight`);
    if (end <= record.progress || end > record.end) {
      throw new RangeError(
        `Expected a progress in (${record.progress}, ${record.end}] for task ${taskId} but received ${end}`,
      );
    }
    this.#records.apply(record, end);
    if (record.progress === record.end) {
      this.#complete(record);
      return { progress: end, completed: true };
    }
    return { progress: end, completed: false };
  }

  /** A worker's final report of a task, done or failed (see TaskManager.reportTaskResult). */
  reportTaskResult(workerId: string, taskId: number, recordsDone: number, error: string): boolean {
    const record = this.#leases.get(taskId);
    if (record === undefined || record.worker !== workerId)
      return this.#leases.completed(taskId) && error === '';
    this.#leases.renew(record);
    if (error === '') {
      if (record.kind === 'prediction' || record.kind === 'train-end')
        this.#records.apply(record, record.end);
      // Gradients of the last minibatches may still be in flight: wait for them, up to the lease.
      if (record.progress === record.end) this.#complete(record);
      else record.reportedDone = true;
      return true;
    }
    if (record.kind === 'prediction' && recordsDone > 0) {
      const progress = Math.min(record.end, record.dispatchedAt + recordsDone);
      if (progress > record.progress) this.#records.apply(record, progress);
    }
    const fatal = fatalTaskErrorCode(error);
    if (fatal !== undefined) {
      // Retrying cannot help (the same records fail the same way): the job fails now, loudly. The
      // task still goes back to todo, so that a checkpoint of this state loses no records.
      this.#job.fail(
        fatal,
        `Task ${record.id} failed on worker ${workerId}: ${error.slice(fatal.length + 2)}`,
      );
    }
    // The worker itself says the task failed while it processed it: always a failure.
    this.#recover(record, `failed: ${error}`, true);
    return true;
  }

  /** Notes the worker alive and renews its leases; returns how many tasks it holds. */
  heartbeat(workerId: string): number {
    if (!this.#job.finished) this.#leases.seen(workerId);
    return this.#leases.renewAll(workerId);
  }

  /** Sends tasks whose lease ran out back to todo; returns how many (see TaskManager.expireLeases). */
  expireLeases(): number {
    const now = this.#settings.now();
    let expired = 0;
    const blamed = new Set<number>();
    for (const ids of this.#leases.holdings()) {
      const id = blamedTask(ids, (taskId) => this.#leases.get(taskId));
      if (id !== undefined) blamed.add(id);
    }
    for (const record of this.#leases.inFlight()) {
      if (record.leaseDeadline <= now && !this.#job.finished) {
        expired++;
        const reason = expiryReason(record, this.#settings.leaseMs);
        if (record.worker !== undefined) this.#leases.forget(record.worker);
        this.#recover(record, reason, record.reportedDone === true || blamed.has(record.id));
      }
    }
    return expired;
  }

  /** Sends back every task of a lost worker, blaming one at most (see TaskManager.recoverWorker). */
  recoverWorker(workerId: string, reason: string, countAsFailure: boolean): number {
    const held = this.#leases.heldBy(workerId) ?? new Set<number>();
    const blamed = countAsFailure ? blamedTask(held, (taskId) => this.#leases.get(taskId)) : undefined;
    const ids = [...held];
    this.#leases.forget(workerId);
    for (const id of recoveryOrder(ids, blamed)) {
      const record = this.#leases.get(id);
      if (record !== undefined && !this.#job.finished) {
        const why = lostWorkerReason(record, reason, id === blamed, countAsFailure);
        this.#recover(record, why, id === blamed);
      }
    }
    return ids.length;
  }

  /** Tasks in flight with their progress. */
  inFlight(): InFlightTask[] {
    return this.#leases.inFlight().map((r) => ({
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
    return [...(this.#leases.heldBy(workerId) ?? [])];
  }

  #complete(record: TaskRecord): void {
    const workerId = record.worker ?? '';
    this.#leases.complete(record);
    this.#settings.onEvent({
      type: 'task-completed',
      taskId: record.id,
      workerId,
      kind: record.kind,
      records: record.end - record.start,
      epoch: record.epoch,
      round: record.round,
    });
    if (record.kind === 'evaluation' && this.#rounds.taskFinished()) {
      this.#settings.onEvent({
        type: 'evaluation-completed',
        round: record.round,
        modelVersion: record.modelVersion,
      });
    }
  }

  /** Sends a task back to the front of its queue, counting a failure if asked; fails the job at the limit. */
  #recover(record: TaskRecord, reason: string, countAsFailure: boolean): void {
    const workerId = record.worker ?? '';
    this.#leases.release(record);
    if (countAsFailure) countFailure(record, workerId, reason);
    this.#settings.onEvent(recoveredEvent(record, workerId, reason, countAsFailure));
    if (record.failures >= this.#settings.maxTaskFailures) {
      this.#job.fail('TASK_FAILED', failureLimitMessage(record));
      return;
    }
    if (record.kind === 'evaluation') this.#rounds.todo.pushFront(record);
    else this.#todo.pushFront(record);
  }
}
