import type { WorkerStatsReport } from '@edl/proto';
import type { Mode } from './model-definition.js';
import { TIMER_NAMES, type Timers } from './timers.js';

/**
 * What a worker sends with each heartbeat for the master's live view: cumulative counters and the
 * mean loss of the steps since the previous heartbeat (so the master's loss curve sees every step,
 * averaged, not a sample of one).
 */
export class LiveStats {
  #lossSum = 0;
  #lossSteps = 0;

  /** Counts the loss of one accepted training step. */
  addLoss(loss: number): void {
    if (!Number.isFinite(loss)) return;
    this.#lossSum += loss;
    this.#lossSteps++;
  }

  /** The report for the next heartbeat; starts a new loss window. */
  take(state: {
    readonly backend: string;
    readonly steps: number;
    readonly records: Readonly<Record<Mode, number>>;
    readonly lastLoss: number | undefined;
    readonly timers: Timers;
  }): WorkerStatsReport {
    const timerSeconds: Record<string, number> = {};
    for (const name of TIMER_NAMES) timerSeconds[name] = state.timers.seconds(name);
    const steps = this.#lossSteps;
    const report: WorkerStatsReport = {
      backend: state.backend,
      steps: state.steps,
      records: { ...state.records },
      ...(state.lastLoss === undefined ? {} : { lastLoss: state.lastLoss }),
      ...(steps > 0 ? { meanLoss: this.#lossSum / steps } : {}),
      lossSteps: steps,
      elapsedSeconds: state.timers.totalSeconds,
      timerSeconds,
    };
    this.#lossSum = 0;
    this.#lossSteps = 0;
    return report;
  }
}
