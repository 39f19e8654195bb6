import type { PrefetchedBatch, Prefetcher } from '@edl/recordio';
import type { StageSettings } from '../dataset/autotune/model.js';
import { StageProbe } from '../dataset/autotune/stage-probe.js';

/** What a {@link ReadAheadTuning} may set, fixed when the prefetcher starts. */
export interface ReadAheadLimits {
  /** Threads the prefetcher starts with (the most the tuner may make active). */
  readonly maxThreads: number;
  /** The read-ahead bound the prefetcher starts with (the most the tuner may set). */
  readonly maxBytes: number;
  /** Which of the two are `'auto'`; a fixed one keeps its value. */
  readonly tuneThreads: boolean;
  readonly tuneBytes: boolean;
  /** Record bytes per native batch at most: the size assumed until batches are measured. */
  readonly maxBatchBytes: number;
}

/** The consumer's side of a tuned read-ahead, as {@link PrefetchedRanges} reports it. */
export interface ReadAheadMeter {
  /** The consumer asks for a batch. */
  asked(): void;
  /** A batch is handed to the consumer. */
  returned(batch: PrefetchedBatch): void;
}

/**
 * The native RecordIO read-ahead as a stage of the process's dataset tuner: its active threads are
 * the stage's parallelism and its bound, in batches, the stage's buffer, so that the same hill climb
 * that tunes `mapParallel` and `prefetch` weighs the ring's decoding time (measured by the native
 * threads) against the consumer's time between batches, within the same RAM and CPU budgets. The
 * prefetcher starts with every thread it may use (the budget's) and the tuner activates them one
 * at a time, each kept only when it measurably raised throughput (see step-trial.ts).
 */
export class ReadAheadTuning implements ReadAheadMeter {
  readonly #limits: ReadAheadLimits;
  readonly #probe: StageProbe;
  #prefetcher: Prefetcher | undefined;
  /** Native counters at the last batch: decoding time is attributed per batch delivered since. */
  #decodeNs = 0;
  #delivered = 0;
  /** Mean bytes of a delivered batch (records and bounds), 0 before the first. */
  #batchBytes = 0;
  #batches = 0;

  constructor(limits: ReadAheadLimits) {
    this.#limits = limits;
    // Start as the fixed read-ahead did: one thread, and as many batches as the bound holds.
    const initial: StageSettings = {
      parallelism: limits.tuneThreads ? 1 : limits.maxThreads,
      bufferSize: Math.max(2, Math.ceil(limits.maxBytes / limits.maxBatchBytes)),
    };
    this.#probe = new StageProbe({
      label: 'RecordIO read-ahead',
      initial,
      tuneParallelism: limits.tuneThreads,
      tuneBuffer: limits.tuneBytes,
      hasWork: true,
      apply: (settings) => this.#apply(settings),
    });
  }

  /** The settings now: active threads, and the bound in batches. */
  get settings(): StageSettings {
    return this.#probe.settings;
  }

  /** Takes control of a prefetcher started with {@link ReadAheadLimits}' maxima. */
  attach(prefetcher: Prefetcher): void {
    this.#prefetcher = prefetcher;
    this.#apply(this.#probe.settings);
  }

  asked(): void {
    this.#probe.asked();
  }

  returned(batch: PrefetchedBatch): void {
    const prefetcher = this.#prefetcher;
    if (prefetcher !== undefined && !prefetcher.closed) {
      const stats = prefetcher.stats;
      const batches = stats.batchesDelivered - this.#delivered;
      if (batches > 0) this.#probe.addWork((stats.decodeNanoseconds - this.#decodeNs) / 1e6, batches);
      this.#decodeNs = stats.decodeNanoseconds;
      this.#delivered = stats.batchesDelivered;
    }
    const bytes = batch.data.byteLength + batch.bounds.byteLength;
    this.#batchBytes += (bytes - this.#batchBytes) / ++this.#batches;
    // The ring has no parent stage: reading the file is part of its threads' work.
    this.#probe.startInput()();
    this.#probe.returned(batch.data);
  }

  /** Leaves the tuner (the reader closed). */
  close(): void {
    this.#probe.ended();
    this.#prefetcher = undefined;
  }

  #apply(settings: StageSettings): void {
    const prefetcher = this.#prefetcher;
    if (prefetcher === undefined || prefetcher.closed) return;
    const batchBytes = this.#batches > 0 ? this.#batchBytes : this.#limits.maxBatchBytes;
    const bytes = this.#limits.tuneBytes
      ? Math.min(this.#limits.maxBytes, Math.max(1, Math.ceil(settings.bufferSize * batchBytes)))
      : this.#limits.maxBytes;
    prefetcher.setReadAhead({ maxBufferedBytes: bytes, activeThreads: settings.parallelism });
  }
}
