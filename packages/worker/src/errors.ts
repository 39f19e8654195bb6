import { EdlError } from '@edl/common';
import { FATAL_TASK_ERROR_CODES } from '@edl/proto';

/** Stable codes of the errors @edl/worker throws (besides TypeError / RangeError for bad arguments). */
export type WorkerErrorCode =
  | 'BACKEND_UNAVAILABLE'
  | 'MODEL_DEF_INVALID'
  | 'MODEL_DEF_LOAD_FAILED'
  | 'TASK_FAILED'
  | 'MASTER_ERROR'
  | 'DATA_ERROR'
  | 'TFJS_DUPLICATE'
  | 'NON_FINITE'
  | 'NO_PARAMETER_SERVERS';

/** Base class of every non-argument error of @edl/worker; `code` is stable across releases. */
export class WorkerError extends EdlError<WorkerErrorCode> {
  override readonly name: string = 'WorkerError';
}

/** The error text a worker reports for a failed task: `CODE: message` for @edl/proto's fatal codes. */
export function taskErrorText(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof WorkerError && (FATAL_TASK_ERROR_CODES as readonly string[]).includes(error.code)) {
    return `${error.code}: ${message}`;
  }
  return message;
}
