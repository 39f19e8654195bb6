/**
 * Codes of task errors that fail the whole job at once instead of being retried: running the task
 * again, on any worker, cannot help (the same records give the same non-finite loss). A worker
 * reports such an error as `CODE: message` in `ReportTaskResultRequest.error`.
 */
export const FATAL_TASK_ERROR_CODES = ['NON_FINITE', 'NO_PARAMETER_SERVERS'] as const;

/** A fatal task error code. */
export type FatalTaskErrorCode = (typeof FATAL_TASK_ERROR_CODES)[number];

/** The fatal code a reported task error starts with, or undefined for an ordinary failure. */
export function fatalTaskErrorCode(error: string): FatalTaskErrorCode | undefined {
  return FATAL_TASK_ERROR_CODES.find((code) => error.startsWith(`${code}: `));
}
