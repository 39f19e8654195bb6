import {
  checkInteger,
  checkOneOf,
  createOptimizer,
  type Optimizer,
  type OptimizerConfig,
  type OptimizerSlots,
} from '@edl/common';
import { GradientStatus, modelChecksum, type NamedTensor, shapeSize } from '@edl/proto';
import { ParameterStoreError } from './errors.js';

/** How the parameter store takes gradients. */
export type ParameterStoreMode = 'sync' | 'async';

/** The default staleness bound of async mode: see {@link defaultMaxStaleness}. */
export const DEFAULT_ASYNC_MAX_STALENESS = 8;

/**
 * The staleness bound that wastes no gradient with `numWorkers` workers: while one worker computes
 * a step, each other worker applies about one gradient, two when it is faster, so a bound of twice
 * the number of workers is rarely reached; never below {@link DEFAULT_ASYNC_MAX_STALENESS}.
 */
export function defaultMaxStaleness(numWorkers: number): number {
  return Math.max(DEFAULT_ASYNC_MAX_STALENESS, 2 * Math.max(0, Math.floor(numWorkers)));
}

/** Options of {@link ParameterStore}. */
export interface ParameterStoreOptions {
  /**
   * 'async' (default): each gradient is applied at once if it is at most `maxStaleness` versions
   * old (bounded-staleness SGD, ElasticDL's asynchronous parameter server). 'sync': `gradsToWait`
   * gradients are averaged into one update; only gradients at most `maxStaleness` versions old
   * (default 0 in sync mode: the current version only) join the update.
   */
  readonly mode?: ParameterStoreMode;
  /** Sync mode: gradients averaged into one update (default 1). */
  readonly gradsToWait?: number;
  /**
   * How many versions behind the current model a gradient may be and still be applied (default:
   * {@link DEFAULT_ASYNC_MAX_STALENESS} in async mode, 0 in sync mode). An older gradient is
   * answered STALE and its worker computes it again on the current model: wasted work.
   */
  readonly maxStaleness?: number;
  /**
   * Async mode: scale the learning rate of a gradient `s` versions old by 1 / s (ElasticDL's
   * `lr_staleness_modulation`; default false).
   */
  readonly stalenessModulation?: boolean;
  /** Default SGD with learning rate 0.01. */
  readonly optimizer?: OptimizerConfig;
}

/** What the store did with the gradients it was offered. */
export interface GradientCounts {
  /** Gradients applied (or added to a sync batch). */
  readonly applied: number;
  /** Gradients refused as too stale: each is computed again by its worker. */
  readonly stale: number;
  /** Applied gradients by staleness: index s counts those computed s versions before (the last bucket: that many or more). */
  readonly stalenessHistogram: readonly number[];
}

const STALENESS_BUCKETS = 17;

/** What the caller needs to know before applying a gradient. */
export type GradientCheck = { readonly ok: true } | { readonly ok: false; readonly status: GradientStatus };

/** Everything a checkpoint holds of the store. */
export interface ParameterStoreSnapshot {
  readonly version: number;
  readonly variables: NamedTensor[];
  readonly optimizerStep: number;
  readonly slots: OptimizerSlots;
}

interface Variable {
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

/**
 * The model's variables by name, held by the master as in ElasticDL's worker-pipeline design: workers pull them
 * (`getModel`) and push gradients (`checkGradient` then `applyGradient`, in one synchronous step).
 * Sync mode averages `gradsToWait` gradients of the current version into one update; async mode
 * applies each gradient at once if it is at most `maxStaleness` versions old. Every update bumps
 * the version.
 */
export class ParameterStore {
  readonly mode: ParameterStoreMode;
  readonly gradsToWait: number;
  readonly maxStaleness: number;
  readonly stalenessModulation: boolean;
  readonly optimizer: Optimizer;
  #applied = 0;
  #stale = 0;
  readonly #stalenessHistogram = new Array<number>(STALENESS_BUCKETS).fill(0);
  #version = 0;
  #variables = new Map<string, Variable>();
  #initialized = false;
  #pending = new Map<string, Float32Array>();
  #pendingCount = 0;
  readonly #pinned = new Map<number, NamedTensor[]>();

  constructor(options: ParameterStoreOptions = {}) {
    this.mode = checkOneOf(options.mode ?? 'async', 'mode', ['sync', 'async'] as const);
    this.gradsToWait = checkInteger(options.gradsToWait ?? 1, 'gradsToWait', 1);
    this.maxStaleness = checkInteger(
      options.maxStaleness ?? (this.mode === 'async' ? DEFAULT_ASYNC_MAX_STALENESS : 0),
      'maxStaleness',
      0,
    );
    this.stalenessModulation = options.stalenessModulation ?? false;
    if (typeof this.stalenessModulation !== 'boolean') {
      throw new TypeError(
        `Expected a boolean for stalenessModulation but received ${typeof this.stalenessModulation}`,
      );
    }
    this.optimizer = createOptimizer(options.optimizer ?? { type: 'sgd' });
  }

  /** Gradients applied and refused so far, and the staleness of those applied. */
  get gradientCounts(): GradientCounts {
    return { applied: this.#applied, stale: this.#stale, stalenessHistogram: [...this.#stalenessHistogram] };
  }

  get version(): number {
    return this.#version;
  }

  get initialized(): boolean {
    return this.#initialized;
  }

  /** Names and shapes of the variables. */
  get variableShapes(): ReadonlyMap<string, readonly number[]> {
    return new Map([...this.#variables].map(([name, v]) => [name, v.shape]));
  }

  /** Takes the first worker's freshly initialised variables; later offers are ignored (false). */
  initialize(variables: readonly NamedTensor[]): boolean {
    if (this.#initialized) return false;
    if (variables.length === 0)
      throw new RangeError('Expected at least one variable for variables but received none');
    const map = new Map<string, Variable>();
    for (const v of variables) {
      if (map.has(v.name))
        throw new RangeError(`Expected unique variable names but received '${v.name}' twice`);
      const size = shapeSize(v.shape, `variable '${v.name}' shape`);
      if (size !== v.values.length) {
        throw new RangeError(
          `Expected ${size} values for variable '${v.name}' but received ${v.values.length}`,
        );
      }
      map.set(v.name, { shape: [...v.shape], values: Float32Array.from(v.values) });
    }
    this.#variables = map;
    this.#initialized = true;
    return true;
  }

  /**
   * The model: the latest (`version` < 0) or a version pinned for evaluation. The arrays are the
   * store's own (latest) or the pin's; callers serialize them at once and must not mutate them.
   */
  getModel(version = -1): { version: number; variables: NamedTensor[] } {
    if (version >= 0 && version !== this.#version) {
      const pinned = this.#pinned.get(version);
      if (pinned === undefined) {
        throw new ParameterStoreError(
          'VERSION_UNAVAILABLE',
          `Model version ${version} is neither the current version (${this.#version}) nor pinned for evaluation`,
        );
      }
      return { version, variables: pinned };
    }
    return {
      version: this.#version,
      variables: [...this.#variables].map(([name, v]) => ({ name, shape: v.shape, values: v.values })),
    };
  }

  /**
   * Whether every update applies exactly one gradient (async mode, or sync mode with one gradient
   * to wait for): only then can a worker holding this store's optimizer state apply its own
   * gradient and arrive at the store's next version (see {@link optimizerState}).
   */
  get mirrorable(): boolean {
    return this.mode === 'async' || this.gradsToWait === 1;
  }

  /**
   * The optimizer's configuration, step and slots (copies), for a worker that mirrors this store's
   * updates; undefined when they cannot be mirrored.
   */
  optimizerState(): { config: OptimizerConfig; step: number; slots: NamedTensor[] } | undefined {
    if (!this.mirrorable) return undefined;
    const slots: NamedTensor[] = [];
    for (const [variable, byName] of this.optimizer.slots) {
      const shape = this.#variables.get(variable)?.shape ?? [];
      for (const [name, values] of byName) {
        slots.push({ name: `${variable}/${name}`, shape, values: Float32Array.from(values) });
      }
    }
    return { config: { ...this.optimizer.config }, step: this.optimizer.step, slots };
  }

  /** `modelChecksum` of the current variables, in the store's order. */
  checksum(): number {
    return modelChecksum([...this.#variables.values()].map((v) => v.values));
  }

  /** Keeps a copy of the current version for an evaluation round. */
  pinCurrentVersion(): number {
    if (!this.#pinned.has(this.#version)) {
      this.#pinned.set(
        this.#version,
        [...this.#variables].map(([name, v]) => ({
          name,
          shape: v.shape,
          values: Float32Array.from(v.values),
        })),
      );
    }
    return this.#version;
  }

  unpin(version: number): void {
    this.#pinned.delete(version);
  }

  /**
   * Whether a gradient computed on `version` may be applied now: STALE when too old. Throws
   * RangeError for a gradient that does not fit the model (unknown variable, wrong size).
   */
  checkGradient(version: number, gradients: readonly NamedTensor[]): GradientCheck {
    if (!this.#initialized)
      throw new ParameterStoreError('NOT_INITIALIZED', 'The model has no variables yet');
    if (version > this.#version) {
      throw new RangeError(
        `Expected a model version <= ${this.#version} for modelVersion but received ${version}`,
      );
    }
    const seen = new Set<string>();
    for (const g of gradients) {
      if (seen.has(g.name)) {
        throw new RangeError(`Expected one gradient per variable but received '${g.name}' twice`);
      }
      seen.add(g.name);
      const variable = this.#variables.get(g.name);
      if (variable === undefined) {
        throw new RangeError(`Expected the name of a model variable for a gradient but received '${g.name}'`);
      }
      if (g.values.length !== variable.values.length) {
        throw new RangeError(
          `Expected ${variable.values.length} values for the gradient of '${g.name}' but received ${g.values.length}`,
        );
      }
    }
    if (this.#version - version > this.maxStaleness) {
      this.#stale++;
      return { ok: false, status: GradientStatus.STALE };
    }
    return { ok: true };
  }

  /**
   * Applies (async) or adds to the pending batch (sync) a gradient that passed {@link checkGradient},
   * computed on model version `computedOn` (default: the current one). Returns true when the model
   * version changed.
   */
  applyGradient(gradients: readonly NamedTensor[], computedOn = this.#version): boolean {
    const staleness = Math.max(0, this.#version - computedOn);
    this.#applied++;
    const bucket = Math.min(staleness, STALENESS_BUCKETS - 1);
    this.#stalenessHistogram[bucket] = (this.#stalenessHistogram[bucket] ?? 0) + 1;
    if (this.mode === 'async' || this.gradsToWait === 1) {
      const lrScale = this.mode === 'async' && this.stalenessModulation && staleness > 1 ? 1 / staleness : 1;
      this.optimizer.beginStep();
      for (const g of gradients) {
        const variable = this.#variables.get(g.name) as Variable;
        this.optimizer.apply(g.name, variable.values, g.values, lrScale);
      }
      this.#version++;
      return true;
    }
    for (const g of gradients) {
      const sum = this.#pending.get(g.name);
      if (sum === undefined) this.#pending.set(g.name, Float32Array.from(g.values));
      else for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) + (g.values[i] as number);
    }
    this.#pendingCount++;
    if (this.#pendingCount < this.gradsToWait) return false;
    this.optimizer.beginStep();
    for (const [name, sum] of this.#pending) {
      for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) / this.gradsToWait;
      this.optimizer.apply(name, (this.#variables.get(name) as Variable).values, sum);
    }
    this.#pending = new Map();
    this.#pendingCount = 0;
    this.#version++;
    return true;
  }

  /** Gradients waiting in the sync batch (a checkpoint is only taken when this is 0). */
  get pendingGradients(): number {
    return this.#pendingCount;
  }

  /** A deep copy of weights, slots and version, for a checkpoint. */
  snapshot(): ParameterStoreSnapshot {
    const slots: OptimizerSlots = new Map();
    for (const [variable, byName] of this.optimizer.slots) {
      slots.set(variable, new Map([...byName].map(([name, values]) => [name, Float32Array.from(values)])));
    }
    return {
      version: this.#version,
      variables: [...this.#variables].map(([name, v]) => ({
        name,
        shape: v.shape,
        values: Float32Array.from(v.values),
      })),
      optimizerStep: this.optimizer.step,
      slots,
    };
  }

  /** Restores a snapshot (a master restarting from its checkpoint). */
  restore(snapshot: ParameterStoreSnapshot): void {
    this.#initialized = false;
    this.initialize(snapshot.variables);
    this.#version = snapshot.version;
    this.optimizer.step = snapshot.optimizerStep;
    this.optimizer.slots.clear();
    for (const [variable, byName] of snapshot.slots) this.optimizer.slots.set(variable, new Map(byName));
    this.#pending = new Map();
    this.#pendingCount = 0;
  }
}
