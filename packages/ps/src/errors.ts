import { EdlError } from '@edl/common';

/**
 * Stable codes of {@link ParameterStoreError}: `NOT_INITIALIZED` (no worker has reported the
 * model's variables yet), `VERSION_UNAVAILABLE` (a model version that is neither the current one
 * nor pinned for evaluation); on a parameter-server shard, `UNKNOWN_TABLE` (no embedding table of
 * that name), `WRONG_SHARD` (an id whose row another shard holds), `TABLE_CONFLICT` (a table
 * declared again with another dim or initializer) and `NO_JOB_OPTIMIZER` (a table declared to a
 * shard started without the job's optimizer and seed), `NO_DENSE_VARIABLES` (a dense push or pull
 * to a shard no worker has declared its dense variables to yet). Programs branch on these, never
 * on messages.
 */
export type ParameterStoreErrorCode =
  | 'NOT_INITIALIZED'
  | 'VERSION_UNAVAILABLE'
  | 'UNKNOWN_TABLE'
  | 'WRONG_SHARD'
  | 'TABLE_CONFLICT'
  | 'NO_JOB_OPTIMIZER'
  | 'NO_DENSE_VARIABLES';

/**
 * A request the parameter store cannot honour in its current state. Served over gRPC it is
 * FAILED_PRECONDITION, as the master's own state errors are.
 */
export class ParameterStoreError extends EdlError<ParameterStoreErrorCode> {
  override readonly name = 'ParameterStoreError';
}
