import { GradientStatus, type TaskAssignment, taskKindOf, type WorkerStatsReport } from '@edl/proto';
import { WorkerError } from '../errors.js';
import { LiveStats } from '../live-stats.js';
import type { WorkerLogger } from '../logger.js';
import type { MasterConnection } from '../master-connection.js';
import type { Mode } from '../model-definition.js';
import type { RecordSlice } from '../task-feed.js';
import type { Timers } from '../timers.js';

/**
 * What a worker did, counted in one place: the steps applied and their losses, the records of each
 * mode, the tasks reported done or failed, and the tasks the master took back (whose records are
 * someone else's from then on). Every step strategy counts through it, so that a task is reported
 * once whichever path finished it.
 */
export class TaskAccounting {
  readonly #master: MasterConnection;
  readonly #workerId: string;
  readonly #logger: WorkerLogger;
  readonly #dropped = new Set<number>();
  /** Ids of the tasks reported done (a failing segment must not fail them again). */
  readonly #finishedTasks = new Set<number>();
  readonly #records: Record<Mode, number> = { training: 0, evaluation: 0, prediction: 0 };
  readonly #live = new LiveStats();
  #steps = 0;
  #lastLoss: number | undefined;
  #tasksDone = 0;
  #tasksFailed = 0;

  constructor(master: MasterConnection, workerId: string, logger: WorkerLogger) {
    this.#master = master;
    this.#workerId = workerId;
    this.#logger = logger;
  }

  /** Training steps the master applied. */
  get steps(): number {
    return this.#steps;
  }

  /** The loss of the last applied step. */
  get lastLoss(): number | undefined {
    return this.#lastLoss;
  }

  get tasksDone(): number {
    return this.#tasksDone;
  }

  get tasksFailed(): number {
    return this.#tasksFailed;
  }

  /** Records of `mode` processed so far. */
  records(mode: Mode): number {
    return this.#records[mode];
  }

  /** A copy of the records processed, per mode. */
  recordsByMode(): Record<Mode, number> {
    return { ...this.#records };
  }

  /** Counts one applied training step and its loss. */
  countStep(loss: number): void {
    this.#steps++;
    this.#lastLoss = loss;
    this.#live.addLoss(loss);
  }

  /** Counts the records of `slice` as processed in `mode`, unless the master took its task back. */
  countRecords(mode: Mode, slice: RecordSlice): void {
    if (!this.#dropped.has(slice.task.id)) this.#records[mode] += slice.count;
  }

  /** Whether the master took task `taskId` back from this worker. */
  isDropped(taskId: number): boolean {
    return this.#dropped.has(taskId);
  }

  /** Whether task `taskId` was reported done. */
  isFinished(taskId: number): boolean {
    return this.#finishedTasks.has(taskId);
  }

  /** The report for the next heartbeat (see {@link LiveStats}). */
  liveStats(backend: string, timers: Timers): WorkerStatsReport {
    return this.#live.take({
      backend,
      steps: this.#steps,
      records: this.#records,
      lastLoss: this.#lastLoss,
      timers,
    });
  }

  /**
   * Takes a refusal of `what` (a gradient, evaluation metrics) for `slice`: a task the master no
   * longer holds is dropped; any other refusal fails the task.
   */
  rejected(slice: RecordSlice, status: GradientStatus, what: string): void {
    if (status === GradientStatus.TASK_NOT_HELD) {
      // The master took the task back (lease expired, job over): its records are someone else's now.
      this.#dropped.add(slice.task.id);
      this.#logger.warn('task.dropped', { task: slice.task.id, reason: 'not held by this worker any more' });
      return;
    }
    throw new WorkerError(
      'TASK_FAILED',
      `The master refused the ${what} of task ${slice.task.id} records [${slice.rangeStart}, ${slice.rangeEnd}): ${GradientStatus[status]}`,
    );
  }

  /** Reports `task` done with `recordsDone` records. */
  async finishTask(task: TaskAssignment, recordsDone: number): Promise<void> {
    const response = await this.#master.reportTaskResult({
      workerId: this.#workerId,
      taskId: task.id,
      recordsDone,
    });
    this.#tasksDone++;
    this.#finishedTasks.add(task.id);
    this.#logger.info('task.done', {
      task: task.id,
      kind: taskKindOf(task),
      records: recordsDone,
      accepted: response.accepted,
    });
  }

  /** Reports `task` failed with `error`. */
  async failTask(task: TaskAssignment, error: string): Promise<void> {
    this.#tasksFailed++;
    this.#logger.warn('task.failed', { task: task.id, error });
    await this.#master.reportTaskResult({ workerId: this.#workerId, taskId: task.id, error });
  }
}
