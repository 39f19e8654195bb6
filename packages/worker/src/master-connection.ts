import { type MasterClient, type TaskAssignment, taskKindOf } from '@edl/proto';

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

/** The answer to get_task: a task, or the end of the job. */
export type TaskAnswer =
  | { readonly kind: 'task'; readonly task: TaskAssignment }
  | { readonly kind: 'finished'; readonly error: string };

/**
 * Calls get_task and converts the answer; a task of a type this worker does not know (a newer
 * master) is a RangeError, so that its kind can be read with `taskKindOf` from then on.
 */
export async function fetchTask(master: MasterConnection, workerId: string): Promise<TaskAnswer> {
  const response = await master.getTask(workerId);
  const task = response.task;
  if (response.jobFinished || task === undefined) return { kind: 'finished', error: response.jobError };
  taskKindOf(task);
  return { kind: 'task', task };
}
