import { availableParallelism } from 'node:os';
import { type EventLoopUtilization, performance } from 'node:perf_hooks';
import { checkInteger, checkOptions } from '@edl/common';
import { type ClimbStage, hillClimb, stageBytes } from './hill-climb.js';
import type { StageRates, StageSettings } from './model.js';
import { defaultCpuBudget, defaultDataRamBudget } from './ram-budget.js';
import { StageMeter } from './stage-meter.js';
import { changeDidNotPay, RATE_WINDOW, RateWindow, type Trial } from './step-trial.js';

/** Options of {@link configureAutotune}. */
export interface AutotuneOptions {
  /** Bytes the tuned buffers, threads and read-ahead of this process may hold (default: {@link defaultDataRamBudget}). */
  readonly ramBudgetBytes?: number;
  /**
   * Threads the tuned stages of this process may run together, a hard cap. `'auto'` (the default):
   * {@link defaultCpuBudget}, which leaves the consumer's thread its core, plus that core while the
   * thread is measured idle most of the time (it waits for the pipeline, so its core is unused).
   */
  readonly cpuBudget?: number | 'auto';
}

/** What a stage tells the tuner when it registers. */
export interface TunedStageSpec {
  /** The stage as `/metrics` and the live view name it, e.g. `ParallelMap(parse)`. */
  readonly label: string;
  readonly initial: StageSettings;
  readonly tuneParallelism: boolean;
  readonly tuneBuffer: boolean;
  /** Whether the stage does work of its own per element (a map), measured with `addWork`. */
  readonly hasWork: boolean;
  readonly threadBytes?: number;
  readonly fixedBytes?: number;
  /** Bytes of a buffered element until one is measured (default 0: unknown). */
  readonly elementBytes?: number;
  /** Returns a parallelism change is measured over (default {@link RATE_WINDOW}): fewer for large elements. */
  readonly rateWindow?: number;
  /** Threads the stage runs whatever the tuner does (a reader's decoding threads). */
  readonly fixedThreads?: number;
  /** Applies new settings; called on the stage's consumer thread between two elements. */
  readonly apply: (settings: StageSettings) => void;
}

/** One tuned stage in {@link AutotuneSnapshot}. */
export interface TunedStageSnapshot {
  readonly label: string;
  readonly parallelism: number;
  readonly bufferSize: number;
  /** Elements per second the stage's parent delivers, its own work on one thread, its consumer asks for (0 unmeasured). */
  readonly inputPerSecond: number;
  readonly workPerSecond: number;
  readonly consumerPerSecond: number;
  readonly elementBytes: number;
  /** Elements returned so far, and how many had been when the settings last changed. */
  readonly elements: number;
  readonly lastChangeAtElement: number;
}

/** The tuner's budgets, what its stages hold now and their settings. */
export interface AutotuneSnapshot {
  readonly ramBudgetBytes: number;
  readonly cpuBudget: number;
  /** Modelled bytes of the live stages under their settings. */
  readonly modelledBytes: number;
  readonly rounds: number;
  readonly stages: readonly TunedStageSnapshot[];
  /**
   * The last 16 stages that ended or closed, oldest first, with their final settings and rates:
   * what a pipeline that runs one iterator per task ran with between two of them.
   */
  readonly endedStages: readonly TunedStageSnapshot[];
}

/** The consumer's thread lends its core to the tuned stages while busy less than this share of the time. */
const LEND_BELOW_BUSY = 0.5;
/** Shortest interval (ms) over which the thread's busy share is measured. */
const MIN_UTILIZATION_MS = 20;

/** A thread stepped back is tried again after this many rate windows of elements, then 4x later each time. */
const RETRY_AFTER_WINDOWS = 8;
const RETRY_GROWTH = 4;

/** First pause between two tuning rounds; it grows by half each round up to the longest. */
const FIRST_PERIOD_MS = 10;
const LONGEST_PERIOD_MS = 1000;

/** A registered stage: its meter and settings, held by the stage; the tuner holds it weakly. */
export class TunedStage {
  readonly meter = new StageMeter();
  readonly spec: TunedStageSpec;
  settings: StageSettings;
  rates: StageRates | undefined;
  lastChangeAtElement = 0;
  /** The stage's output rate under its current settings (since the last parallelism change). */
  readonly #window: RateWindow;
  /** A parallelism change under measurement. */
  #trial: Trial | undefined;
  /** Threads at most: those before a change that was stepped back, until element `#retryAt`. */
  #parallelismCap = Number.POSITIVE_INFINITY;
  #retryAt = 0;
  /** Elements before the next try after a step back; grows with each step back. */
  #retryAfter: number;

  constructor(spec: TunedStageSpec) {
    this.spec = spec;
    this.settings = spec.initial;
    this.#window = new RateWindow(spec.rateWindow ?? RATE_WINDOW);
    this.#retryAfter = RETRY_AFTER_WINDOWS * (spec.rateWindow ?? RATE_WINDOW);
  }

  /** The stage returned an element: counts it and lets the tuner run a round when one is due. */
  elementReturned(now: number): void {
    this.meter.elements++;
    this.#measure(now);
    autotuner.maybeTune(now);
  }

  /**
   * The threads the next round may give the stage at most: one more than now, once the output
   * rate under the current ones is measured (a full window) and no change is being measured.
   */
  get maxParallelism(): number {
    if (this.#trial !== undefined || !this.#window.full) return this.settings.parallelism;
    // A step back may have been noise (a busy machine): the thread is tried again, ever later.
    if (this.meter.elements >= this.#retryAt) this.#parallelismCap = Number.POSITIVE_INFINITY;
    return Math.min(this.#parallelismCap, this.settings.parallelism + 1);
  }

  /** Applies new settings; more threads start a trial against the rate measured before. */
  change(settings: StageSettings): void {
    const before = this.#window.perSecond();
    if (settings.parallelism > this.settings.parallelism && before !== undefined) {
      // Not measured: the elements in flight at the change (handed out under the old settings) and
      // the next buffer's worth, among which the new thread's first, which waits for its start.
      this.#trial = { previous: this.settings, before, skip: this.settings.bufferSize + settings.bufferSize };
      this.#window.clear();
    }
    this.settings = settings;
    this.lastChangeAtElement = this.meter.elements;
    this.spec.apply(settings);
  }

  #measure(now: number): void {
    const trial = this.#trial;
    if (trial !== undefined && trial.skip > 0) {
      trial.skip--;
      return;
    }
    this.#window.add(now);
    const after = trial === undefined ? undefined : this.#window.perSecond();
    if (trial === undefined || after === undefined) return;
    this.#trial = undefined;
    // Measured: the next change may be tried at the next round.
    autotuner.soon();
    if (!changeDidNotPay(trial.before, after)) return;
    this.#parallelismCap = trial.previous.parallelism;
    this.#retryAt = this.meter.elements + this.#retryAfter;
    this.#retryAfter *= RETRY_GROWTH;
    this.#window.clear();
    this.change(trial.previous);
  }

  /** Leaves the tuner (the stage ended or closed); its budget is free for the others. */
  unregister(): void {
    autotuner.unregister(this);
  }
}

/**
 * The process's tuner: the tf.data model's optimization loop over every `'auto'` stage of every
 * live pipeline of the process, within one RAM budget and one CPU budget. It owns no thread and
 * no timer: the stages' consumers run a round when one is due, so nothing runs when nothing reads.
 */
class Autotuner {
  ramBudgetBytes = defaultDataRamBudget();
  cpuBudget = defaultCpuBudget();
  /** `cpuBudget: 'auto'`: the consumer's core is lent while its thread is mostly idle. */
  lendConsumerCore = true;
  readonly #stages = new Set<WeakRef<TunedStage>>();
  /** The last stages that left (ended or closed), oldest first, as they were then. */
  readonly #ended: TunedStageSnapshot[] = [];
  #nextRoundAt = 0;
  #periodMs = FIRST_PERIOD_MS;
  rounds = 0;
  /** The consumer thread's event-loop utilization at the last round, and its busy share since. */
  #eluAt: EventLoopUtilization = performance.eventLoopUtilization();
  #threadBusy = 1;

  /** Runs a round at the next element (a change was measured and another may be tried). */
  soon(): void {
    this.#nextRoundAt = 0;
  }

  /**
   * Threads the tuned stages may run now: the CPU budget, which leaves the consumer's thread its
   * core, plus that core while the thread is measured idle most of the time (it waits for the
   * pipeline: its core would stay unused), when the host has that core.
   */
  #cpuThreads(): number {
    const now = performance.eventLoopUtilization();
    const since = performance.eventLoopUtilization(now, this.#eluAt);
    // Short intervals (the first rounds come 10 ms apart) keep the last measure.
    if (since.idle + since.active >= MIN_UTILIZATION_MS) {
      this.#threadBusy = since.utilization;
      this.#eluAt = now;
    }
    const lend =
      this.lendConsumerCore && this.#threadBusy < LEND_BELOW_BUSY && this.cpuBudget < availableParallelism();
    return this.cpuBudget + (lend ? 1 : 0);
  }

  register(spec: TunedStageSpec): TunedStage {
    const stage = new TunedStage(spec);
    this.#stages.add(new WeakRef(stage));
    // A new stage is measured from scratch: tune soon, and often again for a while.
    this.#periodMs = FIRST_PERIOD_MS;
    this.#nextRoundAt = 0;
    this.#eluAt = performance.eventLoopUtilization();
    this.#threadBusy = 1;
    return stage;
  }

  unregister(stage: TunedStage): void {
    for (const ref of this.#stages) {
      if (ref.deref() !== stage && ref.deref() !== undefined) continue;
      this.#stages.delete(ref);
      if (ref.deref() === stage) {
        this.#ended.push(describeStage(stage));
        if (this.#ended.length > ENDED_KEPT) this.#ended.shift();
      }
    }
  }

  live(): TunedStage[] {
    const out: TunedStage[] = [];
    for (const ref of this.#stages) {
      const stage = ref.deref();
      if (stage === undefined) this.#stages.delete(ref);
      else out.push(stage);
    }
    return out;
  }

  maybeTune(now: number): void {
    if (now < this.#nextRoundAt) return;
    this.tune();
    this.#nextRoundAt = now + this.#periodMs;
    this.#periodMs = Math.min(LONGEST_PERIOD_MS, this.#periodMs * 1.5);
  }

  /** One round: closes every stage's window and climbs from the current settings. */
  tune(): void {
    this.rounds++;
    const stages = this.live();
    for (const stage of stages) stage.rates = stage.meter.rates(stage.spec.hasWork) ?? stage.rates;
    const measured = stages.filter((s) => s.rates !== undefined);
    if (measured.length === 0) return;
    const climb = measured.map((s) => toClimbStage(s));
    // Unmeasured stages still hold their memory and threads: the measured ones get the rest.
    const unmeasured = stages.filter((s) => s.rates === undefined);
    // The climb counts the tuned threads of the measured stages; every other thread is set aside:
    // those of unmeasured stages, and fixed ones (a reader's decoding threads not 'auto').
    const heldThreads = (s: TunedStage) =>
      s.spec.fixedThreads ?? (s.spec.tuneParallelism ? s.settings.parallelism : 0);
    const fixedThreads = (s: TunedStage) => (s.spec.tuneParallelism ? 0 : (s.spec.fixedThreads ?? 0));
    const next = hillClimb(climb, {
      ramBytes:
        this.ramBudgetBytes - unmeasured.reduce((sum, s) => sum + stageBytes(toClimbStage(s), s.settings), 0),
      cpuThreads:
        this.#cpuThreads() -
        unmeasured.reduce((sum, s) => sum + heldThreads(s), 0) -
        measured.reduce((sum, s) => sum + fixedThreads(s), 0),
    });
    measured.forEach((stage, i) => {
      const settings = next[i] as StageSettings;
      if (
        settings.parallelism === stage.settings.parallelism &&
        settings.bufferSize === stage.settings.bufferSize
      )
        return;
      stage.change(settings);
    });
  }

  snapshot(): AutotuneSnapshot {
    const stages = this.live();
    return {
      ramBudgetBytes: this.ramBudgetBytes,
      cpuBudget: this.cpuBudget,
      modelledBytes: stages.reduce((sum, s) => sum + stageBytes(toClimbStage(s), s.settings), 0),
      rounds: this.rounds,
      stages: stages.map(describeStage),
      endedStages: [...this.#ended],
    };
  }
}

/** Stages that left the tuner kept for {@link AutotuneSnapshot.endedStages}. */
const ENDED_KEPT = 16;

function describeStage(s: TunedStage): TunedStageSnapshot {
  const perSecond = (ms: number | undefined) => (ms === undefined || ms <= 0 ? 0 : 1000 / ms);
  // The rates measured so far, also those since the last round.
  const rates = s.meter.rates(s.spec.hasWork) ?? s.rates;
  return {
    label: s.spec.label,
    parallelism: s.settings.parallelism,
    bufferSize: s.settings.bufferSize,
    inputPerSecond: perSecond(rates?.inputMs),
    workPerSecond: perSecond(rates?.workMs),
    consumerPerSecond: perSecond(rates?.consumerMs),
    elementBytes: Math.round(rates?.elementBytes ?? unmeasuredElementBytes(s)),
    elements: s.meter.elements,
    lastChangeAtElement: s.lastChangeAtElement,
  };
}

/** Before its rates are measured, a stage still holds its elements: their measured or announced size. */
function unmeasuredElementBytes(stage: TunedStage): number {
  return stage.meter.elementBytes ?? stage.spec.elementBytes ?? 0;
}

function toClimbStage(stage: TunedStage): ClimbStage {
  const { spec } = stage;
  return {
    rates: stage.rates ?? {
      inputMs: 0,
      workMs: 0,
      consumerMs: 0,
      elementBytes: unmeasuredElementBytes(stage),
    },
    settings: stage.settings,
    tuneParallelism: spec.tuneParallelism,
    tuneBuffer: spec.tuneBuffer,
    fixedBytes: spec.fixedBytes ?? 0,
    threadBytes: spec.threadBytes ?? 0,
    maxParallelism: stage.maxParallelism,
  };
}

const autotuner = new Autotuner();

/** Registers an `'auto'` stage with the process's tuner (used by prefetch and mapParallel). */
export function registerTunedStage(spec: TunedStageSpec): TunedStage {
  return autotuner.register(spec);
}

/**
 * Counts memory and threads that a stage holds outside the tuner's reach (threads and bytes
 * fixed when it starts, which the tuner cannot change) against the budgets, so that the
 * tuned stages share what is left; it shows in {@link autotuneSnapshot} with its values. Hold the
 * returned handle while the resources are held, and `unregister()` it when they are freed.
 */
export function reserveDataBudget(reservation: {
  readonly label: string;
  readonly threads: number;
  readonly bytes: number;
}): TunedStage {
  return autotuner.register({
    label: reservation.label,
    initial: { parallelism: reservation.threads, bufferSize: 1 },
    tuneParallelism: false,
    tuneBuffer: false,
    hasWork: false,
    fixedBytes: reservation.bytes,
    fixedThreads: reservation.threads,
    apply: () => undefined,
  });
}

/** The budgets of this process's tuner now. */
export function autotuneBudgets(): { readonly ramBudgetBytes: number; readonly cpuBudget: number } {
  return { ramBudgetBytes: autotuner.ramBudgetBytes, cpuBudget: autotuner.cpuBudget };
}

/**
 * Sets the budgets of this process's tuner (`edl worker --data-ram-budget` calls it). Stages
 * already running are brought within a lower RAM budget at the next round.
 *
 * @throws TypeError / RangeError for a budget that is not a positive integer.
 */
export function configureAutotune(options: AutotuneOptions): void {
  const o = checkOptions(options, 'options', ['ramBudgetBytes', 'cpuBudget']);
  if (o.ramBudgetBytes !== undefined)
    autotuner.ramBudgetBytes = checkInteger(o.ramBudgetBytes, 'options.ramBudgetBytes', 1);
  if (o.cpuBudget === 'auto') {
    autotuner.cpuBudget = defaultCpuBudget();
    autotuner.lendConsumerCore = true;
  } else if (o.cpuBudget !== undefined) {
    autotuner.cpuBudget = checkInteger(o.cpuBudget, 'options.cpuBudget', 1, 4096);
    autotuner.lendConsumerCore = false;
  }
}

/** The tuner's budgets and the settings and measured rates of every live `'auto'` stage. */
export function autotuneSnapshot(): AutotuneSnapshot {
  return autotuner.snapshot();
}

/** Runs a tuning round now (tests and benchmarks; stages run rounds by themselves as they read). */
export function tuneNow(): void {
  autotuner.tune();
}
