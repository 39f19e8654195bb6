// Failure accounting: which task a lost worker is blamed for, how a failure is counted and told.
import type { TaskRecord } from './task-record.js';
import type { TaskManagerEvent } from './types.js';

/**
 * Of the tasks a worker holds (in dispatch order), the one a crash is blamed on: the first not
 * reported done, if nothing of it was applied in this dispatch.
 */
export function blamedTask(
  ids: Iterable<number>,
  inFlight: (taskId: number) => TaskRecord | undefined,
): number | undefined {
  for (const id of ids) {
    const record = inFlight(id);
    if (record === undefined || record.reportedDone === true) continue;
    return record.progress === record.dispatchedAt ? id : undefined;
  }
  return undefined;
}

/**
 * The order in which a lost worker's tasks go back: uncounted ones first, so that a failing task
 * that fails the job leaves the others in todo.
 */
export function recoveryOrder(ids: readonly number[], blamed: number | undefined): number[] {
  return [...ids.filter((i) => i !== blamed), ...ids.filter((i) => i === blamed)];
}

/** Why a task of a lost worker went back: the loss's reason, saying why it was not counted. */
export function lostWorkerReason(
  record: TaskRecord,
  reason: string,
  blamed: boolean,
  countAsFailure: boolean,
): string {
  if (blamed || !countAsFailure) return reason;
  const state = record.progress > record.dispatchedAt ? 'interrupted after progress' : 'not started';
  return `${reason} (${state}: not counted)`;
}

/** Why a task whose lease ran out went back. */
export function expiryReason(record: TaskRecord, leaseMs: number): string {
  return record.reportedDone
    ? `reported done but records [${record.progress}, ${record.end}) were not applied within the lease of ${leaseMs} ms`
    : `lease of ${leaseMs} ms expired on worker ${record.worker}`;
}

/** Counts one failure of `record` on `workerId`: it goes to another worker where one is alive. */
export function countFailure(record: TaskRecord, workerId: string, reason: string): void {
  record.failures++;
  record.failureReasons.push(`worker ${workerId}: ${reason}`);
  record.failedOn ??= new Set();
  record.failedOn.add(workerId);
}

/** The job's error message once `record` failed as often as allowed, with every reason. */
export function failureLimitMessage(record: TaskRecord): string {
  const what =
    record.kind === 'train-end'
      ? 'the train-end callback task'
      : `${record.kind} records [${record.start}, ${record.end}) of '${record.shardName}' (epoch ${record.epoch})`;
  return `Task ${record.id} (${what}) failed ${record.failures} times, the limit (maxTaskFailures): ${record.failureReasons.join('; ')}`;
}

/** The observer's event for a task that went back to todo. */
export function recoveredEvent(
  record: TaskRecord,
  workerId: string,
  reason: string,
  counted: boolean,
): TaskManagerEvent {
  return {
    type: 'task-recovered',
    taskId: record.id,
    workerId,
    reason,
    remaining: record.end - record.progress,
    failures: record.failures,
    counted,
    kind: record.kind,
    epoch: record.epoch,
    round: record.round,
  };
}
