import type { TaskManagerStatus } from '@edl/master';

/** Records of one kind in a final summary. */
export interface RecordCountSummary {
  readonly done: number;
  readonly total: number;
}

/**
 * The `records` of a final status line or `--stats` summary: `done` and `total` of the job's main
 * kind (as before: training records across epochs for training jobs), and the same per kind, so
 * that evaluation records never make `done` exceed `total`.
 */
export interface RecordsSummary extends RecordCountSummary {
  readonly training: RecordCountSummary;
  readonly evaluation: RecordCountSummary;
  readonly prediction: RecordCountSummary;
}

export function recordsSummary(status: TaskManagerStatus): RecordsSummary {
  return { done: status.recordsDone, total: status.recordsTotal, ...status.records };
}
