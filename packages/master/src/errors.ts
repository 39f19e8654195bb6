/** Base of every non-argument error of @edl/master: `code` is stable and safe to switch on. */
export class MasterError extends Error {
  override readonly name: string = 'MasterError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** The job failed: a task failed too often, or the instance manager gave up on a worker. */
export class JobFailedError extends MasterError {
  override readonly name = 'JobFailedError';
}

/** A checkpoint could not be written, read or applied (names the file). */
export class CheckpointError extends MasterError {
  override readonly name = 'CheckpointError';
  constructor(
    code: string,
    message: string,
    readonly path: string,
    options?: { cause?: unknown },
  ) {
    super(code, message, options);
  }
}

/** A request the master cannot honour in its current state (no model yet, unknown variable). */
export class MasterStateError extends MasterError {
  override readonly name = 'MasterStateError';
}
