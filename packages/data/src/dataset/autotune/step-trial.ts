import type { StageSettings } from './model.js';

/**
 * Measuring one parallelism change, as tf.data's model does not but a shared machine needs: the
 * model predicts a gain from per-element times, and a thread added on a core that something else
 * already uses can still make the stage slower. The throughput of the stage's output before the
 * change is compared with the throughput after it, and a change that did not gain
 * {@link MIN_MEASURED_GAIN} is taken back.
 */

/** Returns measured per window: enough to average over a slow request or a scheduler hiccup. */
export const RATE_WINDOW = 64;
/**
 * A thread is kept when it raised throughput by at least this share: one that does not pay for
 * itself (the stage was not the bottleneck after all, or the thread competes for a busy core)
 * costs a core and its heap for nothing, and one that lowers throughput is worse.
 */
export const MIN_MEASURED_GAIN = 0.05;

/** The times of the last returns of a stage, as a rate. */
export class RateWindow {
  readonly #times: number[] = [];
  readonly #size: number;

  /** `returns`: the returns a full window holds. */
  constructor(returns = RATE_WINDOW) {
    this.#size = returns + 1;
  }

  add(now: number): void {
    this.#times.push(now);
    if (this.#times.length > this.#size) this.#times.shift();
  }

  clear(): void {
    this.#times.length = 0;
  }

  get full(): boolean {
    return this.#times.length === this.#size;
  }

  /** Returns per second over the window, or undefined before it is full. */
  perSecond(): number | undefined {
    if (!this.full) return undefined;
    const first = this.#times[0] as number;
    const last = this.#times.at(-1) as number;
    return last > first ? ((this.#size - 1) * 1000) / (last - first) : Number.POSITIVE_INFINITY;
  }
}

/** A parallelism change under measurement. */
export interface Trial {
  /** The settings before the change, to go back to. */
  readonly previous: StageSettings;
  /** Returns per second before the change. */
  readonly before: number;
  /** Returns still to skip before measuring: those in flight at the change, and the new thread's start. */
  skip: number;
}

/** Whether a change measured at `after` returns per second did not pay against `before`, the rate before it. */
export function changeDidNotPay(before: number, after: number): boolean {
  return after < before * (1 + MIN_MEASURED_GAIN);
}
