import type { WorkerStatsReport } from '@edl/proto';
import type { Master } from '../master.js';

/**
 * The latest value of one part of every worker's heartbeat stats (its storage counters, its data
 * pipeline's tuner): what the `/metrics` families and the live view read. A lost worker's last
 * value stays.
 */
export class LatestPerWorker<T> {
  readonly #byWorker = new Map<string, T>();
  readonly #unobserve: () => void;

  /** `pick` returns the part of a heartbeat's stats to keep, or undefined when it has none. */
  constructor(master: Master, pick: (stats: WorkerStatsReport) => T | undefined) {
    this.#unobserve = master.observe({
      onHeartbeat: (workerId: string, stats: WorkerStatsReport | undefined) => {
        const value = stats === undefined ? undefined : pick(stats);
        if (value !== undefined) this.#byWorker.set(workerId, value);
      },
    });
  }

  /** The workers' latest values, in the order they first sent one. */
  entries(): [string, T][] {
    return [...this.#byWorker];
  }

  /** The values alone. */
  values(): T[] {
    return [...this.#byWorker.values()];
  }

  /** Stops listening to the master. */
  close(): void {
    this.#unobserve();
  }
}
