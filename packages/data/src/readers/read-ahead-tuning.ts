import type { PrefetchedBatch, Prefetcher } from '@edl/recordio';
import { SLOTS_PER_THREAD } from '../dataset/autotune/hill-climb.js';
import type { StageSettings } from '../dataset/autotune/model.js';
import { StageProbe } from '../dataset/autotune/stage-probe.js';
import { RATE_WINDOW } from '../dataset/autotune/step-trial.js';
import type { TunedStageSpec } from '../dataset/autotune/tuner.js';

/** The tuner's label of the native RecordIO read-ahead (in `/metrics`, the live view, `--stats`). */
export const READ_AHEAD_LABEL = 'RecordIO read-ahead';

/** What a {@link ReadAheadTuning} may set, fixed when the prefetcher starts. */
export interface ReadAheadLimits {
  /** Threads the prefetcher starts with (the most the tuner may make active). */
  readonly maxThreads: number;
  /** The read-ahead bound the prefetcher starts with (the most the tuner may set). */
  readonly maxBytes: number;
  /** Which of the two are `'auto'`; a fixed one keeps its value. */
  readonly tuneThreads: boolean;
  readonly tuneBytes: boolean;
  /** Record bytes per native batch at most: the size assumed until a batch is measured. */
  readonly maxBatchBytes: number;
  /** Records per native batch, which sizes the window a thread change is measured over. */
  readonly batchRecords: number;
}

/** The consumer's side of a tuned read-ahead, as {@link PrefetchedRanges} reports it. */
export interface ReadAheadMeter {
  /** The consumer asks for a batch. */
  asked(): void;
  /** A batch is handed to the consumer. */
  returned(batch: PrefetchedBatch): void;
}

/**
 * The native bound for `settings` and batches of `batchBytes`: the buffer's batches, within
 * `[1, limits.maxBytes]`; `limits.maxBytes` when the bytes are not tuned. It is also the stage's
 * modelled bytes, so the RAM budget counts what the ring may hold. The ring counts the pieces its
 * threads decode against the same bound and plans them at a quarter of it (at least a chunk), so
 * pieces shrink with it and the threads keep several in flight. (A bound sized by pieces too
 * would feed back: pieces are planned from the bound, and a gzip chunk of text decodes to more
 * than the native estimate of it.)
 */
export function readAheadBound(settings: StageSettings, batchBytes: number, limits: ReadAheadLimits): number {
  if (!limits.tuneBytes) return limits.maxBytes;
  return Math.min(limits.maxBytes, Math.max(1, Math.ceil(settings.bufferSize * batchBytes)));
}

/**
 * Batches a thread change is measured over: as many as hold {@link RATE_WINDOW} batches of 64
 * records, at least 8, so that large batches (4096 records by default: a task may be a few dozen)
 * are still measured within a task, and small ones over enough of them to average out a hiccup.
 */
export function readAheadRateWindow(batchRecords: number): number {
  return Math.min(RATE_WINDOW, Math.max(8, Math.ceil((RATE_WINDOW * 64) / Math.max(1, batchRecords))));
}

/** The batch size assumed until one is measured: the largest (the bound is then the most it may be). */
function firstBatchBytes(limits: ReadAheadLimits): number {
  return Math.min(limits.maxBatchBytes, limits.maxBytes);
}

/**
 * The read-ahead as the tuner sees it: its parallelism the active threads (one to start with, or
 * the fixed count), its buffer the bound in batches ({@link SLOTS_PER_THREAD} per thread to start
 * with), its elements batches of the size measured (until then, the largest, so that the bound is
 * counted from the start), its threads' changes measured over {@link readAheadRateWindow}. A fixed
 * bound counts whole, as fixed bytes; its buffer then only says how many batches the threads may
 * decode at once.
 */
export function readAheadStageSpec(
  limits: ReadAheadLimits,
  apply: (settings: StageSettings) => void,
): TunedStageSpec {
  const parallelism = limits.tuneThreads ? 1 : limits.maxThreads;
  const initial: StageSettings = {
    parallelism,
    bufferSize: Math.max(2, SLOTS_PER_THREAD * (limits.tuneBytes ? parallelism : limits.maxThreads)),
  };
  return {
    label: READ_AHEAD_LABEL,
    initial,
    tuneParallelism: limits.tuneThreads,
    tuneBuffer: limits.tuneBytes,
    hasWork: true,
    fixedThreads: limits.tuneThreads ? undefined : limits.maxThreads,
    fixedBytes: limits.tuneBytes ? 0 : limits.maxBytes,
    elementBytes: limits.tuneBytes ? firstBatchBytes(limits) : 0,
    rateWindow: readAheadRateWindow(limits.batchRecords),
    apply,
  };
}

/** A measured size moved by more than this share: the bound follows it. */
const RESIZE_SHARE = 1 / 8;

/**
 * The native RecordIO read-ahead as a stage of the process's dataset tuner: its active threads are
 * the stage's parallelism and its bound, in batches, the stage's buffer, so that the same hill climb
 * that tunes `mapParallel` and `prefetch` weighs the ring's decoding time (measured by the native
 * threads) against the consumer's time between batches, within the same RAM and CPU budgets. The
 * prefetcher starts with every thread it may use and the tuner activates them one at a time, each
 * kept only when it measurably raised the batch rate (see step-trial.ts). The ring starts small
 * (see {@link readAheadStageSpec}) and grows only while the model says the consumer waits; its
 * bytes are what {@link readAheadBound} makes of the measured batch size, re-applied as it moves,
 * so that the bound and the modelled bytes agree from the first batch.
 */
export class ReadAheadTuning implements ReadAheadMeter {
  readonly #limits: ReadAheadLimits;
  readonly #probe: StageProbe;
  #prefetcher: Prefetcher | undefined;
  /** Delivered batches and their bytes (records and bounds), to size the bound. */
  #batches = 0;
  #deliveredBytes = 0;
  /** The batch size the bound was last computed from. */
  #batchBytes: number;

  constructor(limits: ReadAheadLimits) {
    this.#limits = limits;
    this.#batchBytes = firstBatchBytes(limits);
    this.#probe = new StageProbe(readAheadStageSpec(limits, (settings) => this.#apply(settings)));
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
    const bytes = batch.data.byteLength + batch.bounds.byteLength;
    this.#batches++;
    this.#deliveredBytes += bytes;
    if (prefetcher !== undefined && !prefetcher.closed) {
      const stats = prefetcher.stats;
      // The threads decode ahead of delivery: their time is spread over what they decoded, and a
      // batch costs its share of it (bytes, not batches delivered, which lag the decoding).
      if (stats.decodedBytes > 0)
        this.#probe.addWork(((stats.decodeNanoseconds / stats.decodedBytes) * bytes) / 1e6, 1);
      this.#resize();
    }
    // The ring has no parent stage: reading the file is part of its threads' work.
    this.#probe.addInput(0);
    // A fixed bound is counted whole already (fixed bytes): its batches add nothing.
    this.#probe.returned(batch, this.#limits.tuneBytes ? bytes : 0);
  }

  /** Leaves the tuner (the reader closed). */
  close(): void {
    this.#probe.ended();
    this.#prefetcher = undefined;
  }

  /** Re-applies the bound when the mean batch size moved from the one it used. */
  #resize(): void {
    const batchBytes = this.#deliveredBytes / this.#batches;
    if (Math.abs(batchBytes - this.#batchBytes) <= this.#batchBytes * RESIZE_SHARE) return;
    this.#batchBytes = batchBytes;
    this.#apply(this.#probe.settings);
  }

  #apply(settings: StageSettings): void {
    const prefetcher = this.#prefetcher;
    if (prefetcher === undefined || prefetcher.closed) return;
    prefetcher.setReadAhead({
      maxBufferedBytes: readAheadBound(settings, this.#batchBytes, this.#limits),
      activeThreads: settings.parallelism,
    });
  }
}
