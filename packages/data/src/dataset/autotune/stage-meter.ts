import type { StageRates } from './model.js';

/** Samples a measure needs before the tuner trusts it. */
const MIN_SAMPLES = 4;
/** `estimateBytes` walks an element: measure one in this many. */
export const SIZE_SAMPLE_EVERY = 16;

/**
 * The mean of every sample so far, as tf.data's model keeps processing time per element: a
 * moving window would follow the noise of a busy machine and keep the climb moving, where the
 * running mean settles and the settings with it.
 */
class RunningMean {
  #total = 0;
  #count = 0;
  readonly #minSamples: number;

  constructor(minSamples = MIN_SAMPLES) {
    this.#minSamples = minSamples;
  }

  add(value: number, count = 1): void {
    this.#total += value;
    this.#count += count;
  }

  /** The mean, or undefined before enough samples. */
  get mean(): number | undefined {
    return this.#count < this.#minSamples ? undefined : this.#total / this.#count;
  }
}

/**
 * The measurements of one tunable stage: durations added as they happen (on the stage's own
 * thread, a few additions per element), read as {@link StageRates} by each tuning round.
 */
export class StageMeter {
  readonly #input = new RunningMean();
  readonly #work = new RunningMean();
  readonly #consumer = new RunningMean();
  /** Sizes are sampled sparsely: one sample is enough to stop treating elements as free. */
  readonly #bytes = new RunningMean(1);
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

  /** The mean element size measured so far, or undefined before one was. */
  get elementBytes(): number | undefined {
    return this.#bytes.mean;
  }

  /** The rates so far; undefined until input and consumer times (and work, for a map) were measured. */
  rates(hasWork: boolean): StageRates | undefined {
    const inputMs = this.#input.mean;
    const workMs = this.#work.mean;
    const consumerMs = this.#consumer.mean;
    if (inputMs === undefined || consumerMs === undefined || (hasWork && workMs === undefined))
      return undefined;
    return { inputMs, workMs: workMs ?? 0, consumerMs, elementBytes: this.#bytes.mean ?? 0 };
  }
}
