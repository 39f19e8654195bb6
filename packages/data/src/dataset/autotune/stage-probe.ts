import { performance } from 'node:perf_hooks';
import { estimateBytes } from '../transforms/cache.js';
import type { StageSettings } from './model.js';
import { SIZE_SAMPLE_EVERY } from './stage-meter.js';
import { registerTunedStage, type TunedStage, type TunedStageSpec } from './tuner.js';

/**
 * What an `'auto'` stage (prefetch, mapParallel) measures, in one place: the consumer's time between
 * reads, the parent's read time, sampled element sizes. It registers with the process's tuner on
 * the first read and leaves it at the end of the data, so a finished pipeline holds no budget.
 */
export class StageProbe {
  readonly #spec: Omit<TunedStageSpec, 'initial'>;
  #settings: StageSettings;
  #stage: TunedStage | undefined;
  #returnedAt: number | undefined;
  #sampled = 0;
  /** Sampled size of the last input, added to the output's for a stage that holds both. */
  #inputBytes = 0;

  constructor(spec: TunedStageSpec) {
    const { initial, apply, ...rest } = spec;
    this.#settings = initial;
    this.#spec = {
      ...rest,
      apply: (settings) => {
        this.#settings = settings;
        apply(settings);
      },
    };
  }

  /** The current settings (the initial ones until the tuner changes them). */
  get settings(): StageSettings {
    return this.#settings;
  }

  #registered(): TunedStage {
    this.#stage ??= registerTunedStage({ ...this.#spec, initial: this.#settings });
    return this.#stage;
  }

  /** The consumer asks for an element. */
  asked(): void {
    const stage = this.#registered();
    if (this.#returnedAt !== undefined) stage.meter.addConsumer(performance.now() - this.#returnedAt);
    this.#returnedAt = undefined;
  }

  /** Starts timing one read of the parent; the returned function ends it. */
  startInput(): (input?: unknown) => void {
    const start = performance.now();
    return (input) => {
      this.addInput(performance.now() - start);
      if (input !== undefined && this.#sampled % SIZE_SAMPLE_EVERY === 0)
        this.#inputBytes = estimateBytes(input);
    };
  }

  /** One read of the parent took `ms` (0 for a stage without one, whose reads are its own work). */
  addInput(ms: number): void {
    this.#stage?.meter.addInput(ms);
  }

  /** `ms` of own work for `count` elements (a map's threads). */
  addWork(ms: number, count: number): void {
    if (count > 0) this.#stage?.meter.addWork(ms, count);
  }

  /**
   * An element is returned to the consumer; `bytes`, when the stage knows its exact size, is
   * counted for every element instead of an estimate of one in {@link SIZE_SAMPLE_EVERY}.
   */
  returned(value: unknown, bytes?: number): void {
    const stage = this.#registered();
    if (bytes !== undefined) stage.meter.addElementBytes(bytes);
    else if (this.#sampled++ % SIZE_SAMPLE_EVERY === 0)
      stage.meter.addElementBytes(this.#inputBytes + estimateBytes(value));
    const now = performance.now();
    this.#returnedAt = now;
    stage.elementReturned(now);
  }

  /** The data ended, failed or the iterator closed: leave the tuner until the next read. */
  ended(): void {
    this.#stage?.unregister();
    this.#stage = undefined;
    this.#returnedAt = undefined;
  }
}
