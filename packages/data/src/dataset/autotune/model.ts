/**
 * The performance model the tuner climbs, after tf.data's (core/framework/model.h): every tunable
 * stage is a producer feeding a consumer through a bounded buffer, and the time the consumer waits
 * per element is that of an M/M/1/K queue. All times are milliseconds per element, measured.
 */

/** What a tunable stage measured over the last window. */
export interface StageRates {
  /** Time one read from the stage's parent takes (the parent's whole pipeline, as this stage sees it). */
  readonly inputMs: number;
  /** Time the stage's own work takes per element on one thread (0 for a prefetch). */
  readonly workMs: number;
  /** Time the stage's consumer spends between two reads (the training step, or the next stage). */
  readonly consumerMs: number;
  /** Estimated bytes a buffered element holds (input and output of a map stage). */
  readonly elementBytes: number;
}

/** The values the tuner sets on a stage. */
export interface StageSettings {
  /** Threads working (1 for a prefetch). */
  readonly parallelism: number;
  /** Elements buffered or in flight at most. */
  readonly bufferSize: number;
}

/**
 * Probability that a buffer of `bufferSize` is empty when the consumer asks, and so the time it
 * waits: `p * producerMs`. With `r = consumerMs / producerMs`, `p = (1 - r) / (1 - r^(n + 1))`
 * (`1 / (n + 1)` when `r = 1`): a slower producer (`r < 1`) leaves the consumer waiting about
 * `producerMs - consumerMs`, a faster one (`r > 1`) hides its variance better with every slot.
 */
export function bufferWaitMs(producerMs: number, consumerMs: number, bufferSize: number): number {
  if (producerMs <= 0) return 0;
  if (consumerMs <= 0) return producerMs;
  const r = consumerMs / producerMs;
  const n = Math.max(1, bufferSize);
  if (Math.abs(r - 1) < 1e-9) return producerMs / (n + 1);
  const power = r ** (n + 1);
  // A very fast producer: the buffer is (almost) never empty.
  if (!Number.isFinite(power)) return 0;
  return (producerMs * (1 - r)) / (1 - power);
}

/**
 * Time per element a stage's producer side needs: its parent's read time, or its own work spread
 * over the threads that can run at once (no more than the elements in flight), whichever is slower.
 */
export function producerMs(rates: StageRates, settings: StageSettings): number {
  const lanes = Math.max(1, Math.min(settings.parallelism, settings.bufferSize));
  return Math.max(rates.inputMs, rates.workMs / lanes);
}

/** The modelled wait of the stage's consumer per element under `settings`. */
export function stageWaitMs(rates: StageRates, settings: StageSettings): number {
  return bufferWaitMs(producerMs(rates, settings), rates.consumerMs, settings.bufferSize);
}
