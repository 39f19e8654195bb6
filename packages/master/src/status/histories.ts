// Bounded histories of a job: chart series, the throughput with its ETA, and the event list.
import type { JobEvent } from './types.js';

const MAX_EVENTS = 50;
/** The ETA uses the throughput over about this many milliseconds. */
const ETA_WINDOW_MS = 30_000;

/** Keeps at most `max` points by dropping every other point of the older half (resolution halves, range stays). */
export function pushBounded<T>(series: T[], point: T, max: number): void {
  series.push(point);
  if (series.length <= max) return;
  const half = Math.floor(series.length / 2);
  const thinned = series.slice(0, half).filter((_, i) => i % 2 === 0);
  series.splice(0, half, ...thinned);
}

/** Records per second between samples of a growing record count, and the ETA they give. */
export class ThroughputHistory {
  readonly #maxPoints: number;
  /** [seconds since start, records per second]. */
  readonly #points: Array<readonly [number, number]> = [];
  #lastSample: { at: number; records: number } | undefined;
  #recent: Array<{ at: number; records: number }> = [];

  constructor(maxPoints: number) {
    this.#maxPoints = maxPoints;
  }

  /** Takes the record count at `at` (ms); a point is added `seconds` after the start. */
  sample(at: number, records: number, seconds: number): void {
    const last = this.#lastSample;
    this.#lastSample = { at, records };
    this.#recent.push({ at, records });
    while (this.#recent.length > 2 && (this.#recent[0]?.at ?? at) < at - ETA_WINDOW_MS) this.#recent.shift();
    if (last === undefined || at <= last.at) return;
    const rate = Math.max(0, ((records - last.records) * 1000) / (at - last.at));
    pushBounded(this.#points, [seconds, rate] as const, this.#maxPoints);
  }

  /** The latest point, [seconds since start, records per second]. */
  get latest(): readonly [number, number] | undefined {
    return this.#points[this.#points.length - 1];
  }

  /** Every point (a copy). */
  points(): Array<readonly [number, number]> {
    return [...this.#points];
  }

  /** Seconds left to reach `total` from `done` at the recent throughput; null when unknown. */
  eta(done: number, total: number, state: string): number | null {
    if (state !== 'running') return 0;
    const first = this.#recent[0];
    const last = this.#recent[this.#recent.length - 1];
    if (first === undefined || last === undefined || last.at <= first.at) return null;
    const rate = ((last.records - first.records) * 1000) / (last.at - first.at);
    if (rate <= 0) return null;
    return Math.max(0, (total - done) / rate);
  }
}

/** The last events of the job, oldest first. */
export class EventLog {
  readonly #events: JobEvent[] = [];

  /** Adds an event that happened at `at` (ms), dropping the oldest beyond the limit. */
  add(at: number, type: JobEvent['type'], message: string): void {
    this.#events.push({ time: new Date(at).toISOString(), type, message });
    if (this.#events.length > MAX_EVENTS) this.#events.shift();
  }

  /** The events kept (a copy). */
  list(): JobEvent[] {
    return [...this.#events];
  }
}
