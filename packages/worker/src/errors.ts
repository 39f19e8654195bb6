/** Stable codes of the errors @edl/worker throws (besides TypeError / RangeError for bad arguments). */
export type WorkerErrorCode =
  | 'BACKEND_UNAVAILABLE'
  | 'MODEL_DEF_INVALID'
  | 'MODEL_DEF_LOAD_FAILED'
  | 'TASK_FAILED'
  | 'MASTER_ERROR'
  | 'DATA_ERROR'
  | 'TFJS_DUPLICATE'
  | 'NON_FINITE';

/** Base class of every non-argument error of @edl/worker; `code` is stable across releases. */
export class WorkerError extends Error {
  override readonly name: string = 'WorkerError';
  readonly code: WorkerErrorCode;

  constructor(code: WorkerErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
  }
}

/** Formats a value for the "Expected <what> for <name> but received <value>" argument errors. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `'${value}'`;
  if (value === null || value === undefined || typeof value !== 'object') return String(value);
  try {
    return JSON.stringify(value);
  } catch {
    return Object.prototype.toString.call(value);
  }
}
