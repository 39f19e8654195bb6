import type { StageRates } from './model.js';

/** Samples a window needs before its rates replace the estimate. */
const MIN_SAMPLES = 4;
/** Weight of a new window against the estimate so far (an exponential moving average). */
const NEW_WEIGHT = 0.5;
/** `estimateBytes` walks an element: measure one in this many. */
export const SIZE_SAMPLE_EVERY = 16;

/** A sum of durations and how many there were, since the last window closed. */
class Window {
  totalMs = 0;
  count = 0;
  readonly #minSamples: number;

  constructor(minSamples = MIN_SAMPLES) {
    this.#minSamples = minSamples;
  }

  add(ms: number, count = 1): void {
    this.totalMs += ms;
    this.count += count;
  }

  /** The new estimate from `previous` and this window (or `previous` when too few samples), then resets. */
  close(previous: number | undefined): number | undefined {
    if (this.count < this.#minSamples) return previous;
    const mean = this.totalMs / this.count;
    this.totalMs = 0;
    this.count = 0;
    return previous === undefined ? mean : previous + NEW_WEIGHT * (mean - previous);
  }
}

/**
 * The measurements of one tunable stage: durations added as they happen (on the stage's own
 * thread, a few additions per element), closed into {@link StageRates} by each tuning round.
 */
export class StageMeter {
  readonly #input = new Window();
  readonly #work = new Window();
  readonly #consumer = new Window();
  /** Sizes are sampled sparsely: one sample is enough to stop treating elements as free. */
  readonly #bytes = new Window(1);
  #rates: { inputMs?: number; workMs?: number; consumerMs?: number; elementBytes?: number } = {};
  /** Elements the stage has returned. */
  elements = 0;

  /** One read of the parent (and, for a map, the hand-off of the element), in ms. */
  addInput(ms: number): void {
    this.#input.add(ms);
  }

  /** `ms` of the stage's own work for `count` elements. */
  addWork(ms: number, count: number): void {
    this.#work.add(ms, count);
  }

  /** The consumer's time between two reads. */
  addConsumer(ms: number): void {
    this.#consumer.add(ms);
  }

  /** The estimated size of a buffered element (sampled). */
  addElementBytes(bytes: number): void {
    this.#bytes.add(bytes);
  }

  /** Closes the window; undefined until input and consumer times were both measured. */
  rates(hasWork: boolean): StageRates | undefined {
    const r = this.#rates;
    r.inputMs = this.#input.close(r.inputMs);
    r.workMs = this.#work.close(r.workMs);
    r.consumerMs = this.#consumer.close(r.consumerMs);
    r.elementBytes = this.#bytes.close(r.elementBytes);
    if (r.inputMs === undefined || r.consumerMs === undefined) return undefined;
    if (hasWork && r.workMs === undefined) return undefined;
    return {
      inputMs: r.inputMs,
      workMs: r.workMs ?? 0,
      consumerMs: r.consumerMs,
      elementBytes: r.elementBytes ?? 0,
    };
  }
}
