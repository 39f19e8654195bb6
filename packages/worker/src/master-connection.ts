import type { MasterClient } from '@edl/proto';
import { TaskType } from '@edl/proto';

/**
 * The calls a worker makes to its master: the subset of `MasterClient` (@edl/proto) it uses, so that
 * a worker can also run against a master in the same process.
 */
export type MasterConnection = Pick<
  MasterClient,
  | 'getTask'
  | 'reportTaskResult'
  | 'getModel'
  | 'reportVariables'
  | 'reportGradient'
  | 'reportEvaluationMetrics'
  | 'heartbeat'
>;

/** The methods of a {@link MasterConnection}, for wrappers that decorate each of them. */
export const MASTER_CONNECTION_METHODS = [
  'getTask',
  'reportTaskResult',
  'getModel',
  'reportVariables',
  'reportGradient',
  'reportEvaluationMetrics',
  'heartbeat',
] as const satisfies ReadonlyArray<keyof MasterConnection>;

/** What kind of work a task is, as the worker names it. */
export type TaskKind = 'training' | 'evaluation' | 'prediction' | 'wait' | 'train_end_callback';

/** A task with plain numbers (the wire has int64s). */
export interface WorkerTask {
  readonly id: number;
  readonly kind: TaskKind;
  readonly shardName: string;
  readonly start: number;
  readonly end: number;
  readonly modelVersion: number;
  readonly epoch: number;
  readonly leaseMs: number;
  readonly extendedConfig: Readonly<Record<string, string>>;
}

/** The answer to get_task: a task, or the end of the job. */
export type TaskAnswer =
  | { readonly kind: 'task'; readonly task: WorkerTask }
  | { readonly kind: 'finished'; readonly error: string };

const KINDS: Partial<Record<TaskType, TaskKind>> = {
  [TaskType.TRAINING]: 'training',
  [TaskType.EVALUATION]: 'evaluation',
  [TaskType.PREDICTION]: 'prediction',
  [TaskType.WAIT]: 'wait',
  [TaskType.TRAIN_END_CALLBACK]: 'train_end_callback',
};

/** Calls get_task and converts the answer. */
export async function fetchTask(master: MasterConnection, workerId: string): Promise<TaskAnswer> {
  const response = await master.getTask(workerId);
  const task = response.task;
  if (response.jobFinished || task === undefined) return { kind: 'finished', error: response.jobError };
  const kind = KINDS[task.type];
  if (kind === undefined)
    throw new RangeError(`Expected a known task type for task ${task.id} but received ${task.type}`);
  return { kind: 'task', task: { ...task, kind } };
}
