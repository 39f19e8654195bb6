// Dispatch and leases: which worker holds which task until when, who was seen lately, what finished.
import { type TaskAssignment, TaskType, taskTypeOf } from '@edl/proto';
import type { TaskQueue } from '../task-queue.js';
import type { TaskRecord } from './task-record.js';

const WAIT_ASSIGNMENT_ID = 0;

/**
 * The tasks in flight, each leased to one worker until a deadline that its reports and heartbeats
 * renew; when each worker was last seen; and the ids of the tasks finished exactly once, so that late
 * duplicates can be told so.
 */
export class LeaseTable {
  readonly leaseMs: number;
  readonly #now: () => number;
  readonly #doing = new Map<number, TaskRecord>();
  readonly #byWorker = new Map<string, Set<number>>();
  /** Ids of tasks finished exactly once, so late duplicates are told ALREADY_APPLIED. */
  readonly #completed = new Set<number>();
  /** When each worker last called getTask or heartbeat; dropped when it is lost. */
  readonly #lastSeen = new Map<string, number>();

  constructor(leaseMs: number, now: () => number) {
    this.leaseMs = leaseMs;
    this.#now = now;
  }

  /** Tasks in flight. */
  get size(): number {
    return this.#doing.size;
  }

  /** The task `taskId` if it is in flight. */
  get(taskId: number): TaskRecord | undefined {
    return this.#doing.get(taskId);
  }

  /** The tasks in flight, in dispatch order (a copy: leases may be released while it is walked). */
  inFlight(): TaskRecord[] {
    return [...this.#doing.values()];
  }

  /** Ids of the tasks `workerId` holds, in dispatch order. */
  heldBy(workerId: string): ReadonlySet<number> | undefined {
    return this.#byWorker.get(workerId);
  }

  /** What each worker holds, one set of ids per worker. */
  holdings(): IterableIterator<ReadonlySet<number>> {
    return this.#byWorker.values();
  }

  /** Whether `taskId` finished exactly once. */
  completed(taskId: number): boolean {
    return this.#completed.has(taskId);
  }

  /** Notes that `workerId` is alive now. */
  seen(workerId: string): void {
    this.#lastSeen.set(workerId, this.#now());
  }

  /** Forgets when `workerId` was seen: it is gone. */
  forget(workerId: string): void {
    this.#lastSeen.delete(workerId);
  }

  /** Leases `record` to `workerId` from its current progress on. */
  lease(record: TaskRecord, workerId: string): void {
    record.worker = workerId;
    this.renew(record);
    record.dispatchedAt = record.progress;
    this.#doing.set(record.id, record);
    let ids = this.#byWorker.get(workerId);
    if (ids === undefined) {
      ids = new Set();
      this.#byWorker.set(workerId, ids);
    }
    ids.add(record.id);
  }

  /** Gives `record` a full lease from now. */
  renew(record: TaskRecord): void {
    record.leaseDeadline = this.#now() + this.leaseMs;
  }

  /** Renews the lease of each task `workerId` holds and has not reported done; returns how many it holds. */
  renewAll(workerId: string): number {
    const ids = this.#byWorker.get(workerId);
    if (ids === undefined) return 0;
    const deadline = this.#now() + this.leaseMs;
    for (const id of ids) {
      const record = this.#doing.get(id);
      if (record !== undefined && record.reportedDone !== true) record.leaseDeadline = deadline;
    }
    return ids.size;
  }

  /** Takes `record` off its worker; it is no longer in flight. */
  release(record: TaskRecord): void {
    this.#doing.delete(record.id);
    delete record.reportedDone;
    if (record.worker !== undefined) {
      const ids = this.#byWorker.get(record.worker);
      ids?.delete(record.id);
      if (ids?.size === 0) this.#byWorker.delete(record.worker);
    }
    delete record.worker;
  }

  /** Releases `record` for good: it is finished. */
  complete(record: TaskRecord): void {
    this.release(record);
    this.#completed.add(record.id);
  }

  /**
   * The next task of `queue` for `workerId`: the first one that did not fail on this worker, or one
   * that did when no other worker has been seen within the lease (it must run somewhere).
   */
  takeFor(queue: TaskQueue<TaskRecord>, workerId: string): TaskRecord | undefined {
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
}

/**
 * What a worker is sent for a task it was leased: the records from its progress on, and, once it
 * resumes past its start, that start (`taskStart`). Evaluation tasks carry the version they
 * evaluate; the others the version now.
 */
export function assignmentOf(
  record: TaskRecord,
  modelVersion: () => number,
  leaseMs: number,
): TaskAssignment {
  return {
    id: record.id,
    type: taskTypeOf(record.kind),
    shardName: record.shardName,
    start: record.progress,
    end: record.end,
    modelVersion: record.kind === 'evaluation' ? record.modelVersion : modelVersion(),
    epoch: record.epoch,
    leaseMs,
    extendedConfig: {
      ...(record.kind === 'evaluation' ? { evaluationRound: String(record.round) } : {}),
      // A window shuffle counts its windows from the task's first record (see TaskFeed).
      ...(record.progress > record.start ? { taskStart: String(record.start) } : {}),
    },
  };
}

/** The answer when nothing is to be done now but tasks are in flight: ask again later. */
export function waitAssignment(modelVersion: number, epoch: number, leaseMs: number): TaskAssignment {
  return {
    id: WAIT_ASSIGNMENT_ID,
    type: TaskType.WAIT,
    shardName: '',
    start: 0,
    end: 0,
    modelVersion,
    epoch,
    leaseMs,
    extendedConfig: {},
  };
}
