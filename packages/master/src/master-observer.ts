import type { WorkerStatsReport } from '@edl/proto';
import type { EvaluationResult } from './evaluation-service.js';
import type { TaskManagerEvent } from './tasks/types.js';

/**
 * Hears what happens in a {@link Master} (the live view and the Prometheus metrics use it). Every
 * method is optional and called synchronously on the master's path: keep them cheap.
 */
export interface MasterObserver {
  /** A task-manager event: epoch or evaluation round started, task completed or recovered, job end. */
  onTaskEvent?(event: TaskManagerEvent): void;
  /** A worker's heartbeat, with its counters when it sends them. */
  onHeartbeat?(workerId: string, stats: WorkerStatsReport | undefined): void;
  /** A finished evaluation round. */
  onEvaluation?(result: EvaluationResult): void;
  /** A checkpoint on disk. */
  onCheckpoint?(path: string, modelVersion: number): void;
  /** A worker process or pod started; `restarts` > 0 when it replaces one that was lost. */
  onWorkerStarted?(workerId: string, restarts: number): void;
  /** A worker is gone; `recovered` of its tasks went back to todo. */
  onWorkerLost?(workerId: string, reason: string, recovered: number): void;
}
