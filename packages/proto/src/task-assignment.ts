import { type Task, TaskType } from './generated/edl/v1/master_pb.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/**
 * What a task is, by name: the one vocabulary of master, worker, logs, status pages and checkpoint
 * files. `wait` is never a real task (nothing to do now, tasks in flight); `train-end` runs the
 * train-end callbacks once after training (TRAIN_END_CALLBACK on the wire).
 */
export type TaskKind = 'training' | 'evaluation' | 'prediction' | 'wait' | 'train-end';

/** The wire type of each kind: the only place where the two vocabularies meet. */
const TASK_TYPES: Readonly<Record<TaskKind, TaskType>> = {
  training: TaskType.TRAINING,
  evaluation: TaskType.EVALUATION,
  prediction: TaskType.PREDICTION,
  wait: TaskType.WAIT,
  'train-end': TaskType.TRAIN_END_CALLBACK,
};

const TASK_KINDS = new Map<TaskType, TaskKind>(
  Object.entries(TASK_TYPES).map(([kind, type]) => [type, kind as TaskKind]),
);

/** The wire type of a task kind. */
export function taskTypeOf(kind: TaskKind): TaskType {
  return TASK_TYPES[kind];
}

/**
 * The kind of a task from its wire type; a RangeError for a type this version does not know (a newer
 * master), naming the task.
 */
export function taskKindOf(task: Pick<TaskAssignment, 'id' | 'type'>): TaskKind {
  const kind = TASK_KINDS.get(task.type);
  if (kind === undefined)
    throw new RangeError(`Expected a known task type for task ${task.id} but received ${task.type}`);
  return kind;
}

/**
 * A task as workers and the master handle it: numbers instead of int64 bigints. `type` is the wire
 * enum; {@link taskKindOf} names it.
 */
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
