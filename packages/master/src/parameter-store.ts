import { GradientStatus, type NamedTensor, shapeSize } from '@edl/proto';
import { MasterStateError } from './errors.js';
import { createOptimizer, type Optimizer, type OptimizerConfig, type OptimizerSlots } from './optimizers.js';
import { checkInteger, checkOneOf } from './validate.js';

/** Options of {@link ParameterStore}. */
export interface ParameterStoreOptions {
  /** 'sync' (default): gradients of the current version only; 'async': up to maxStaleness old. */
  readonly mode?: 'sync' | 'async';
  /** Sync mode: gradients averaged into one update (default 1). */
  readonly gradsToWait?: number;
  /** Async mode: how many versions behind a gradient may be (default 0). */
  readonly maxStaleness?: number;
  /** Default SGD with learning rate 0.01. */
  readonly optimizer?: OptimizerConfig;
}

/** What the master needs to know before applying a gradient. */
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
  readonly mode: 'sync' | 'async';
  readonly gradsToWait: number;
  readonly maxStaleness: number;
  readonly optimizer: Optimizer;
  #version = 0;
  #variables = new Map<string, Variable>();
  #initialized = false;
  #pending = new Map<string, Float32Array>();
  #pendingCount = 0;
  readonly #pinned = new Map<number, NamedTensor[]>();

  constructor(options: ParameterStoreOptions = {}) {
    this.mode = checkOneOf(options.mode ?? 'sync', 'mode', ['sync', 'async'] as const);
    this.gradsToWait = checkInteger(options.gradsToWait ?? 1, 'gradsToWait', 1);
    this.maxStaleness = checkInteger(options.maxStaleness ?? 0, 'maxStaleness', 0);
    this.optimizer = createOptimizer(options.optimizer ?? { type: 'sgd' });
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
        throw new MasterStateError(
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
    if (!this.#initialized) throw new MasterStateError('NOT_INITIALIZED', 'The model has no variables yet');
    if (version > this.#version) {
      throw new RangeError(
        `Expected a model version <= ${this.#version} for modelVersion but received ${version}`,
      );
    }
    for (const g of gradients) {
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
    const staleness = this.#version - version;
    const limit = this.mode === 'sync' ? 0 : this.maxStaleness;
    return staleness > limit ? { ok: false, status: GradientStatus.STALE } : { ok: true };
  }

  /**
   * Applies (async) or adds to the pending batch (sync) a gradient that passed {@link checkGradient}.
   * Returns true when the model version changed.
   */
  applyGradient(gradients: readonly NamedTensor[]): boolean {
    if (this.mode === 'async' || this.gradsToWait === 1) {
      this.optimizer.beginStep();
      for (const g of gradients) {
        const variable = this.#variables.get(g.name) as Variable;
        this.optimizer.apply(g.name, variable.values, g.values);
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
