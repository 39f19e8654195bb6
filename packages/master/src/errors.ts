import { EdlError } from '@edl/common';
import type { FatalTaskErrorCode } from '@edl/proto';

/**
 * Stable codes of {@link MasterError} and its subclasses. Programs branch on these, never on messages.
 *
 * - Job failures ({@link JobFailedError}): `TASK_FAILED` (a task failed too often),
 *   `WORKER_RESTARTS_EXHAUSTED`, `WORKER_RELAUNCHES_EXHAUSTED`, `PS_RESTARTS_EXHAUSTED` (a
 *   parameter-server shard could not be kept running), `POD_CREATE_FAILED` (the instance manager
 *   gave up), or a fatal task code of @edl/proto such as `NON_FINITE`.
 * - Checkpoints ({@link CheckpointError}): `NO_CHECKPOINT_DIR`, `NOT_FOUND`, `READ_FAILED`,
 *   `WRITE_FAILED`, `CORRUPT`, `DATA_MISMATCH`, `OPTIMIZER_MISMATCH`, `CHECKPOINT_SKIPPED` (a
 *   parameter-server shard died: the job rolls back instead), `DENSE_PLACEMENT_MISMATCH` (a job
 *   resumes with its dense variables placed elsewhere than the checkpoint holds them).
 * - State ({@link MasterStateError}): `ALREADY_STARTED`, `ROUND_NOT_OPEN`, `TASK_NOT_HELD`,
 *   `WRONG_TASK_TYPE`. A model that is not initialized or a version that is gone is the parameter
 *   store's `ParameterStoreError` (@edl/ps), not a master code.
 */
export type MasterErrorCode =
  | 'TASK_FAILED'
  | 'WORKER_RESTARTS_EXHAUSTED'
  | 'WORKER_RELAUNCHES_EXHAUSTED'
  | 'PS_RESTARTS_EXHAUSTED'
  | 'POD_CREATE_FAILED'
  | FatalTaskErrorCode
  | 'NO_CHECKPOINT_DIR'
  | 'NOT_FOUND'
  | 'READ_FAILED'
  | 'WRITE_FAILED'
  | 'CORRUPT'
  | 'DATA_MISMATCH'
  | 'OPTIMIZER_MISMATCH'
  | 'CHECKPOINT_SKIPPED'
  | 'DENSE_PLACEMENT_MISMATCH'
  | 'ALREADY_STARTED'
  | 'ROUND_NOT_OPEN'
  | 'TASK_NOT_HELD'
  | 'WRONG_TASK_TYPE';

/** Base of every non-argument error of @edl/master: `code` is stable and safe to switch on. */
export class MasterError extends EdlError<MasterErrorCode> {
  override readonly name: string = 'MasterError';
}

/** The job failed: a task failed too often, or the instance manager gave up on a worker. */
export class JobFailedError extends MasterError {
  override readonly name = 'JobFailedError';
}

/** A checkpoint could not be written, read or applied (names the file). */
export class CheckpointError extends MasterError {
  override readonly name = 'CheckpointError';
  constructor(
    code: MasterErrorCode,
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** A request the master cannot honour in its current state (a task not held, a round not open). */
export class MasterStateError extends MasterError {
  override readonly name = 'MasterStateError';
}
