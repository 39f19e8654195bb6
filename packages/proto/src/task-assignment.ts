import { type Task, TaskType } from './generated/edl/v1/master_pb.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/** A task as workers and the master handle it: numbers instead of int64 bigints. */
export interface TaskAssignment {
  readonly id: number;
  readonly type: TaskType;
  /** Shard name, as the data reader that created the shard knows it. */
  readonly shardName: string;
  /** Records [start, end) of the shard. */
  readonly start: number;
  readonly end: number;
  /** Evaluation tasks: the fixed model version to evaluate; otherwise the version at dispatch. */
  readonly modelVersion: number;
  readonly epoch: number;
  /** Heartbeat at least this often (milliseconds) or the task goes back to todo. */
  readonly leaseMs: number;
  readonly extendedConfig: Readonly<Record<string, string>>;
}

/** Wire message -> TaskAssignment. */
export function fromTaskMessage(task: Task): TaskAssignment {
  return {
    id: toSafeNumber(task.id, 'task.id'),
    type: task.type,
    shardName: task.shard?.name ?? '',
    start: toSafeNumber(task.shard?.start ?? 0n, 'task.shard.start'),
    end: toSafeNumber(task.shard?.end ?? 0n, 'task.shard.end'),
    modelVersion: toSafeNumber(task.modelVersion, 'task.modelVersion'),
    epoch: task.epoch,
    leaseMs: task.leaseMs,
    extendedConfig: { ...task.extendedConfig },
  };
}

/** TaskAssignment -> wire message (a literal, not `create`: this is on every dispatch). */
export function toTaskMessage(task: TaskAssignment): Task {
  return {
    $typeName: 'edl.v1.Task',
    id: toWireInt(task.id, 'task.id'),
    type: task.type,
    shard: {
      $typeName: 'edl.v1.Shard',
      name: task.shardName,
      start: toWireInt(task.start, 'task.start'),
      end: toWireInt(task.end, 'task.end'),
    },
    modelVersion: toWireInt(task.modelVersion, 'task.modelVersion'),
    epoch: task.epoch,
    leaseMs: task.leaseMs,
    extendedConfig: { ...task.extendedConfig },
  };
}

/** The name of a task type, for logs: 'TRAINING', 'WAIT', ... */
export function taskTypeName(type: TaskType): string {
  return TaskType[type] ?? `TASK_TYPE_${type}`;
}
