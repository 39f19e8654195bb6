// The live view's workers: each one's state and latest heartbeat counters.
import type { WorkerStatsReport } from '@edl/proto';
import type { WorkerStatus } from './types.js';

interface WorkerEntry {
  id: string;
  state: WorkerStatus['state'];
  backend: string;
  steps: number;
  records: number;
  recordsPerSecond: number;
  lastHeartbeatMs: number | null;
  restarts: number;
  lastLoss: number | null;
  timers: Record<string, number>;
  elapsedSeconds: number;
  /** Step time seconds (compute_loss + report_gradient) at the previous heartbeat. */
  stepSeconds: number;
}

/** Hears a worker's mean step time over the `steps` steps since its previous heartbeat. */
export type StepSecondsListener = (workerId: string, seconds: number, steps: number) => void;

/** Every worker the job has seen, with what its heartbeats last said. Cheap per heartbeat. */
export class WorkerTable {
  readonly #workers = new Map<string, WorkerEntry>();

  /** A worker (re)started in a slot that restarted `restarts` times before. */
  started(workerId: string, restarts: number): void {
    this.#entry(workerId).restarts = restarts;
  }

  /**
   * Takes a heartbeat at `now` (ms): the worker is running, and its counters are `stats` when it
   * sent them. `onStep` hears the mean step time of the steps since its previous heartbeat.
   */
  heartbeat(
    workerId: string,
    stats: WorkerStatsReport | undefined,
    now: number,
    onStep: StepSecondsListener,
  ): void {
    const entry = this.#entry(workerId);
    if (entry.state === 'starting') entry.state = 'running';
    if (stats !== undefined) {
      const records = stats.records.training + stats.records.evaluation + stats.records.prediction;
      const window =
        entry.lastHeartbeatMs === null ? stats.elapsedSeconds : (now - entry.lastHeartbeatMs) / 1000;
      if (window > 0) entry.recordsPerSecond = Math.max(0, (records - entry.records) / window);
      const stepSeconds = (stats.timerSeconds.compute_loss ?? 0) + (stats.timerSeconds.report_gradient ?? 0);
      const steps = stats.steps - entry.steps;
      if (steps > 0) onStep(workerId, (stepSeconds - entry.stepSeconds) / steps, steps);
      entry.stepSeconds = stepSeconds;
      entry.backend = stats.backend;
      entry.steps = stats.steps;
      entry.records = records;
      entry.lastLoss = stats.lastLoss ?? null;
      entry.timers = { ...stats.timerSeconds };
      entry.elapsedSeconds = stats.elapsedSeconds;
    }
    entry.lastHeartbeatMs = now;
  }

  /** A worker is gone: `exited` when it left deliberately, `lost` when it crashed. */
  gone(workerId: string, deliberate: boolean): void {
    const entry = this.#entry(workerId);
    entry.state = deliberate ? 'exited' : 'lost';
    entry.recordsPerSecond = 0;
  }

  /** Records processed by every worker, as their last heartbeats said. */
  records(): number {
    let sum = 0;
    for (const w of this.#workers.values()) sum += w.records;
    return sum;
  }

  /** Workers by state. */
  counts(): Record<WorkerStatus['state'], number> {
    const counts = { starting: 0, running: 0, lost: 0, exited: 0 };
    for (const w of this.#workers.values()) counts[w.state]++;
    return counts;
  }

  /** Every worker as plain JSON, in the order they were first seen. */
  snapshot(): WorkerStatus[] {
    return [...this.#workers.values()].map((w) => ({
      id: w.id,
      state: w.state,
      backend: w.backend,
      steps: w.steps,
      records: w.records,
      recordsPerSecond: w.recordsPerSecond,
      lastHeartbeat: w.lastHeartbeatMs === null ? null : new Date(w.lastHeartbeatMs).toISOString(),
      restarts: w.restarts,
      lastLoss: w.lastLoss,
      timers: { ...w.timers },
      elapsedSeconds: w.elapsedSeconds,
    }));
  }

  #entry(id: string): WorkerEntry {
    let entry = this.#workers.get(id);
    if (entry === undefined) {
      entry = {
        id,
        state: 'starting',
        backend: '',
        steps: 0,
        records: 0,
        recordsPerSecond: 0,
        lastHeartbeatMs: null,
        restarts: 0,
        lastLoss: null,
        timers: {},
        elapsedSeconds: 0,
        stepSeconds: 0,
      };
      this.#workers.set(id, entry);
    }
    return entry;
  }
}
