// What the live view and the metrics read of a job: the status snapshot and its parts.
import type { EvaluationResult } from '../evaluation-service.js';
import type { RecordCount } from '../tasks/types.js';

/** One worker, as the live view shows it. */
export interface WorkerStatus {
  readonly id: string;
  /** `starting` until its first heartbeat; `lost` when it crashed; `exited` when it left. */
  readonly state: 'starting' | 'running' | 'lost' | 'exited';
  readonly backend: string;
  readonly steps: number;
  /** Records processed, all kinds together. */
  readonly records: number;
  /** Over the last heartbeat window. */
  readonly recordsPerSecond: number;
  /** ISO time of the last heartbeat, if any. */
  readonly lastHeartbeat: string | null;
  /** Restarts of the slot this worker runs in (0: the first process of its slot). */
  readonly restarts: number;
  readonly lastLoss: number | null;
  /** Seconds per activity since the worker started (spans overlap when the pipeline prefetches). */
  readonly timers: Readonly<Record<string, number>>;
  readonly elapsedSeconds: number;
}

/** Task counts of one epoch (training) or evaluation round. */
export interface TaskCounts {
  readonly label: string;
  readonly kind: 'training' | 'evaluation' | 'prediction';
  readonly total: number;
  readonly todo: number;
  /** Leased now; the master counts these for the whole job, shown on the active row. */
  readonly doing: number;
  readonly done: number;
  /** Recoveries that counted as a failure (the task went back to todo, or failed the job). */
  readonly failed: number;
}

/** One line of the event list. */
export interface JobEvent {
  readonly time: string;
  readonly type:
    | 'worker-started'
    | 'worker-relaunched'
    | 'worker-lost'
    | 'task-recovered'
    | 'checkpoint'
    | 'epoch-started'
    | 'evaluation'
    | 'job-ended';
  readonly message: string;
}

/** What `GET /api/status` answers and the live page shows. */
export interface JobStatusSnapshot {
  readonly job: {
    readonly id: string;
    readonly type: string;
    readonly state: 'running' | 'succeeded' | 'failed';
    readonly error: string | null;
    readonly phase: string;
    readonly epoch: number;
    readonly numEpochs: number;
    readonly modelVersion: number;
    readonly startedAt: string;
    readonly elapsedSeconds: number;
    /** Seconds left at the recent throughput; null when unknown. */
    readonly etaSeconds: number | null;
    /** Records of the current phase, as in the final job summary. */
    readonly recordsDone: number;
    readonly recordsTotal: number;
    readonly records: Readonly<Record<'training' | 'evaluation' | 'prediction', RecordCount>>;
    readonly gradients: Readonly<Record<'applied' | 'stale' | 'rejected', number>>;
    readonly workerRelaunches: number;
    readonly lastCheckpoint: string | null;
  };
  readonly workers: readonly WorkerStatus[];
  readonly tasks: readonly TaskCounts[];
  /** [seconds since start, records per second]. */
  readonly throughput: ReadonlyArray<readonly [number, number]>;
  /** [seconds since start, model version, mean loss of the steps since the previous point]. */
  readonly loss: ReadonlyArray<readonly [number, number, number]>;
  readonly evaluations: readonly EvaluationResult[];
  /** The last 50, oldest first. */
  readonly events: readonly JobEvent[];
}

/** Options of {@link JobStatusTracker}. */
export interface JobStatusTrackerOptions {
  /** The job's id, shown on the page and carried by log lines. */
  readonly jobId: string;
  /** Throughput sampling period in milliseconds (default 1000). */
  readonly sampleMs?: number;
  /** Points kept per chart series (default 1200). */
  readonly maxPoints?: number;
  /** Time source (tests). */
  readonly now?: () => number;
}
