import type { OptimizerConfig } from '@edl/common';
import { type DenseUpdateRef, type GradientReport, GradientStatus, type NamedTensor } from '@edl/proto';
import type { ParameterStore } from './parameter-store.js';

/** The answer to a gradient or metrics report. */
export interface ReportReply {
  readonly status: GradientStatus;
  readonly modelVersion: number;
  readonly taskProgress: number;
  /** With `wantModel`: the variables at `modelVersion` (the store's own arrays: serialize at once). */
  readonly variables?: readonly NamedTensor[];
  /** With `mirror`: the gradient was applied alone onto its own version (see GradientReport). */
  readonly mirrored?: boolean;
  /** With `mirrored`: the store's checksum at `modelVersion`. */
  readonly modelChecksum?: number;
  /**
   * ACCEPTED: the update the gradient joined, for a worker that pushes its dense gradient to the
   * parameter-server shards (the shards apply it as this store would have).
   */
  readonly update?: DenseUpdateRef;
}

/** The answer to a GetModel call. */
export interface ModelReply {
  readonly version: number;
  readonly initialized: boolean;
  /** The caller holds this version already: `variables` is empty. */
  readonly unchanged: boolean;
  /** The store's own arrays (latest) or a pin's: serialize at once, never mutate. */
  readonly variables: NamedTensor[];
  /** Asked for with `wantOptimizer`, on the latest version, when updates can be mirrored. */
  readonly optimizer?: { config: OptimizerConfig; step: number; slots: NamedTensor[] };
}

/** What became of the gradients workers pushed, for the job's statistics. */
export interface GradientOutcomes {
  /** Applied to the model (or added to a sync batch). */
  readonly applied: number;
  /** Refused as too stale: each one is computed again, wasted work. */
  readonly stale: number;
  /** Refused for their ranges (task not held, already applied, out of order). */
  readonly rejected: number;
  /**
   * Applied gradients whose worker mirrored the update on its replica: answered with a checksum
   * instead of the model (see `mirror` in GradientReport).
   */
  readonly mirrored: number;
  /** Applied gradients by staleness (index s: s versions old; the last bucket: that many or more). */
  readonly stalenessHistogram: readonly number[];
}

/**
 * The calls the GetModel, ReportVariables and ReportGradient handlers make
 * ({@link parameterRpcHandlers}): a {@link ParameterService}, or the master in front of one.
 */
export interface ParameterEndpoints {
  getModel(version: number, haveVersion?: number, wantOptimizer?: boolean): ModelReply;
  reportVariables(
    workerId: string,
    variables: readonly NamedTensor[],
  ): { accepted: boolean; version: number };
  reportGradient(report: GradientReport): ReportReply;
}

/**
 * The exactly-once bookkeeping a gradient passes through around the store: in the master, its task
 * manager's record ranges. It runs inside the same synchronous step as the store's update, so a
 * range is applied once or not at all.
 */
export interface GradientLedger {
  /** Whether every range of the report may be applied now; a refusal carries its reply. */
  checkRanges(
    report: GradientReport,
  ): { readonly ok: true } | { readonly ok: false; readonly reply: ReportReply };
  /** Whether the version an update is about to replace must stay readable (an evaluation reads it). */
  keepsVersion(version: number): boolean;
  /**
   * The gradient was applied (`versionChanged`: the update made a new version): marks its ranges
   * done and returns the first task's progress.
   */
  recordApplied(report: GradientReport, versionChanged: boolean): number;
}

/**
 * The gradient path of a {@link ParameterStore}: the model for GetModel, the first worker's
 * variables, and each gradient checked against the ledger and the store, then applied and recorded
 * in one synchronous step (nothing between the checks and the writes awaits).
 */
export class ParameterService implements ParameterEndpoints {
  readonly store: ParameterStore;
  readonly #ledger: GradientLedger;
  #rejectedGradients = 0;
  #mirroredGradients = 0;

  constructor(store: ParameterStore, ledger: GradientLedger) {
    this.store = store;
    this.#ledger = ledger;
  }

  /**
   * The model at `version` (< 0: the latest). With `haveVersion`, the version the worker already
   * holds, an unchanged model comes back without its variables (`unchanged: true`).
   */
  getModel(version: number, haveVersion?: number, wantOptimizer = false): ModelReply {
    const store = this.store;
    if (!store.initialized) {
      return { version: store.version, initialized: false, unchanged: false, variables: [] };
    }
    const wanted = version < 0 ? store.version : version;
    if (haveVersion !== undefined && haveVersion === wanted) {
      return { version: wanted, initialized: true, unchanged: true, variables: [] };
    }
    const model = { ...store.getModel(version), initialized: true, unchanged: false };
    // The optimizer's state is the latest version's: only that model comes with it.
    const optimizer = wantOptimizer && model.version === store.version ? store.optimizerState() : undefined;
    return optimizer === undefined ? model : { ...model, optimizer };
  }

  /** Offers a worker's freshly initialised variables: the first offer is kept, later ones ignored. */
  reportVariables(
    _workerId: string,
    variables: readonly NamedTensor[],
  ): { accepted: boolean; version: number } {
    return { accepted: this.store.initialize(variables), version: this.store.version };
  }

  /** What became of the gradients pushed so far. */
  get gradientOutcomes(): GradientOutcomes {
    const counts = this.store.gradientCounts;
    return { ...counts, rejected: this.#rejectedGradients, mirrored: this.#mirroredGradients };
  }

  /**
   * Exactly-once gradient path: check the ranges (ledger), check staleness, then apply and record
   * together.
   */
  reportGradient(report: GradientReport): ReportReply {
    const store = this.store;
    const ranges = this.#ledger.checkRanges(report);
    if (!ranges.ok) {
      this.#rejectedGradients++;
      return ranges.reply;
    }
    const check = store.checkGradient(report.modelVersion, report.gradients);
    if (!check.ok) {
      return this.#withModel(report, {
        status: check.status,
        modelVersion: store.version,
        taskProgress: report.rangeStart,
      });
    }
    if (this.#ledger.keepsVersion(store.version)) store.pinCurrentVersion();
    // A worker that mirrors the updates reaches the next version by itself when its gradient is
    // the whole update (one gradient per update) onto the version it was computed on (staleness 0,
    // so no learning-rate scaling): the reply then needs no model, only a checksum to check against.
    const mirrored = report.mirror === true && store.mirrorable && report.modelVersion === store.version;
    const update = report.wantUpdate === true ? this.#updateOf(report.modelVersion) : undefined;
    const bumped = store.applyGradient(report.gradients, report.modelVersion);
    const progress = this.#ledger.recordApplied(report, bumped);
    const reply = {
      status: GradientStatus.ACCEPTED,
      modelVersion: store.version,
      taskProgress: progress,
      ...(update === undefined ? {} : { update }),
    };
    if (mirrored) {
      this.#mirroredGradients++;
      return { ...reply, mirrored: true, modelChecksum: store.checksum() };
    }
    return this.#withModel(report, reply);
  }

  /**
   * The update a gradient computed on `computedOn` joins now: the version it makes, the gradients
   * it averages and the learning rate's divisor, as {@link ParameterStore.applyGradient} applies them.
   */
  #updateOf(computedOn: number): DenseUpdateRef {
    const store = this.store;
    const staleness = Math.max(0, store.version - computedOn);
    const single = store.mode === 'async' || store.gradsToWait === 1;
    return {
      version: store.version + 1,
      gradients: single ? 1 : store.gradsToWait,
      lrDivisor: store.mode === 'async' && store.stalenessModulation && staleness > 1 ? staleness : 1,
    };
  }

  #withModel(report: GradientReport, reply: ReportReply): ReportReply {
    if (report.wantModel !== true) return reply;
    return { ...reply, variables: this.store.getModel().variables };
  }
}
