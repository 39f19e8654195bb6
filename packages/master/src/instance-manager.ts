import type { MasterErrorCode } from './errors.js';

/**
 * Starts and watches the worker instances of a job. `local` runs processes on this machine; a
 * Kubernetes implementation (a later issue) creates pods. Both report through {@link InstanceEvents}.
 */
export interface InstanceManager {
  /** Starts the initial workers. */
  start(): Promise<void>;
  /** Changes the target number of workers while the job runs; resolves to the new target. */
  scaleTo(numWorkers: number): Promise<number>;
  /** The number of workers the manager tries to keep running. */
  readonly targetWorkers: number;
  /** Workers alive now. */
  readonly runningWorkers: number;
  /** Stops every worker: politely first (SIGTERM), then by force after `graceMs`. */
  stop(graceMs?: number): Promise<void>;
}

/** What an instance manager tells the master. */
export interface InstanceEvents {
  /**
   * A worker is gone. `crashed` is false for a deliberate stop (scale-down, job end), whose tasks go
   * back to todo without counting as failures.
   */
  workerLost(workerId: string, reason: string, crashed: boolean): void;
  /** The manager gave up (restart limit): the job must fail with this message. */
  giveUp(code: MasterErrorCode, message: string): void;
  /** True once the job ended: exits are then expected and nothing is restarted. */
  jobEnded(): boolean;
  /** Asks a worker to leave through its heartbeats (before signals). */
  requestStop?(workerId: string): void;
  /** A worker process started; `restarts` > 0 when it replaces one that ended while the job ran. */
  workerStarted?(workerId: string, restarts: number): void;
}
