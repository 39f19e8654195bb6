import {
  checkInteger,
  checkSafeInteger,
  createOptimizer,
  type Optimizer,
  type OptimizerConfig,
  type OptimizerSlots,
} from '@edl/common';
import { type NamedTensor, shapeSize } from '@edl/proto';
import { ParameterStoreError } from '../errors.js';
import type { ParameterStoreSnapshot } from '../parameter-store.js';
import { placeDenseVariables } from '../sparse/placement.js';

/** The update a pushed dense gradient joins, as the master's answer to the step named it. */
export interface DenseUpdate {
  /** The model version the update makes. */
  readonly version: number;
  /** The gradients the update averages (sync: gradsToWait; async: 1). */
  readonly gradients: number;
  /** The learning rate is divided by this (async staleness modulation; 1 otherwise). */
  readonly lrDivisor: number;
}

interface PendingUpdate {
  readonly sums: Map<string, Float32Array>;
  count: number;
}

interface Waiter {
  readonly minVersion: number;
  readonly wake: () => void;
}

/**
 * The dense variables one parameter-server shard holds (those `placeDenseVariables` puts on it),
 * updated by the dense optimizer kernels of `@edl/common`, as the master's `ParameterStore` updates
 * them when it holds them. The master stays the arbiter of steps (staleness, sync batches, the
 * version counter): each push names the update it joins. An update of one gradient is applied at
 * once; an update of K gradients (sync mode) is the average of the K pushed with its version,
 * applied when the K-th arrives. The shard's version is the highest update applied: pushes applied
 * as they come (async) may reach it out of order, as ElasticDL's parameter servers did.
 */
export class DenseShard {
  readonly optimizer: Optimizer;
  #variables: Map<string, { readonly shape: readonly number[]; readonly values: Float32Array }> | undefined;
  #version = 0;
  /** Pushes applied or added to an update since the shard started or restored. */
  #pushes = 0;
  readonly #pending = new Map<number, PendingUpdate>();
  #waiters: Waiter[] = [];

  constructor(optimizer: OptimizerConfig) {
    this.optimizer = createOptimizer(optimizer);
  }

  /** The highest update applied (or the version restored). */
  get version(): number {
    return this.#version;
  }

  /** Whether a worker has declared this shard's variables (or a checkpoint restored them). */
  get declared(): boolean {
    return this.#variables !== undefined;
  }

  /**
   * Takes the first declaration of this shard's variables with their initial values; later ones
   * are ignored (false), as the master keeps the first worker's variables.
   */
  declare(variables: readonly NamedTensor[]): boolean {
    if (this.#variables !== undefined) return false;
    const held = new Map<string, { shape: readonly number[]; values: Float32Array }>();
    for (const v of variables) {
      if (held.has(v.name))
        throw new RangeError(`Expected unique dense variable names but received '${v.name}' twice`);
      const size = shapeSize(v.shape, `dense variable '${v.name}' shape`);
      if (size !== v.values.length)
        throw new RangeError(
          `Expected ${size} values for dense variable '${v.name}' but received ${v.values.length}`,
        );
      held.set(v.name, { shape: [...v.shape], values: Float32Array.from(v.values) });
    }
    this.#variables = held;
    this.#wake();
    return true;
  }

  /**
   * Applies a step's gradient of this shard's variables as part of `update`; returns the shard's
   * version after it. Every gradient is checked before anything changes.
   */
  push(gradients: readonly NamedTensor[], update: DenseUpdate): number {
    const variables = this.#held();
    checkSafeInteger(update.version, 'updateVersion');
    checkInteger(update.gradients, 'updateGradients', 1);
    checkInteger(update.lrDivisor, 'updateLrDivisor', 1);
    const seen = new Set<string>();
    for (const g of gradients) {
      const variable = variables.get(g.name);
      if (variable === undefined || seen.has(g.name))
        throw new RangeError(
          `Expected each dense variable of this shard once for a gradient but received '${g.name}'${variable === undefined ? ' (not held here)' : ' twice'}`,
        );
      seen.add(g.name);
      if (g.values.length !== variable.values.length)
        throw new RangeError(
          `Expected ${variable.values.length} values for the gradient of '${g.name}' but received ${g.values.length}`,
        );
    }
    this.#pushes++;
    if (update.gradients === 1) {
      this.#apply(
        gradients.map((g) => [g.name, Float32Array.from(g.values)]),
        1 / update.lrDivisor,
      );
    } else {
      let pending = this.#pending.get(update.version);
      if (pending === undefined) {
        pending = { sums: new Map(), count: 0 };
        this.#pending.set(update.version, pending);
      }
      for (const g of gradients) {
        const sum = pending.sums.get(g.name);
        if (sum === undefined) pending.sums.set(g.name, Float32Array.from(g.values));
        else for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) + (g.values[i] as number);
      }
      pending.count++;
      if (pending.count < update.gradients) return this.#version;
      this.#pending.delete(update.version);
      for (const sum of pending.sums.values())
        for (let i = 0; i < sum.length; i++) sum[i] = (sum[i] as number) / update.gradients;
      this.#apply([...pending.sums], 1);
    }
    this.#version = Math.max(this.#version, update.version);
    this.#wake();
    return this.#version;
  }

  /**
   * This shard's variables (copies) once it has applied update `minVersion`, or after `waitMs`
   * with what it holds then: a push lost with its worker leaves the master to roll the job back,
   * and the pull must not hang meanwhile.
   */
  async pull(minVersion: number, waitMs: number): Promise<{ version: number; variables: NamedTensor[] }> {
    this.#held();
    if (this.#version < minVersion && waitMs > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          resolve();
        }, waitMs);
        const waiter: Waiter = {
          minVersion,
          wake: () => {
            clearTimeout(timer);
            resolve();
          },
        };
        this.#waiters.push(waiter);
      });
    }
    const variables = this.#held();
    return {
      version: this.#version,
      variables: [...variables].map(([name, v]) => ({
        name,
        shape: v.shape,
        values: Float32Array.from(v.values),
      })),
    };
  }

  /** The version, the variables held (undefined before a declaration) and the pushes taken, for the shard's log. */
  describe(): { version: number; variables: string[] | undefined; pushes: number } {
    return {
      version: this.#version,
      variables: this.#variables && [...this.#variables.keys()],
      pushes: this.#pushes,
    };
  }

  /** Weights, optimizer slots and version (copies), for the shard's part of a checkpoint. */
  snapshot(): ParameterStoreSnapshot {
    const slots: OptimizerSlots = new Map();
    for (const [variable, byName] of this.optimizer.slots)
      slots.set(variable, new Map([...byName].map(([name, values]) => [name, Float32Array.from(values)])));
    return {
      version: this.#version,
      variables: [...(this.#variables ?? [])].map(([name, v]) => ({
        name,
        shape: v.shape,
        values: Float32Array.from(v.values),
      })),
      optimizerStep: this.optimizer.step,
      slots,
    };
  }

  /**
   * Replaces the variables by this shard's share of `parts` (the dense parts of every shard of a
   * checkpoint, written by any number of shards): each variable is placed again by size over
   * `numShards` shards, so a checkpoint re-shards. With no parts, the shard holds none until a worker
   * declares them again (the job's start). The version becomes `version`.
   */
  restore(
    parts: readonly ParameterStoreSnapshot[],
    shardIndex: number,
    numShards: number,
    version: number,
  ): void {
    const all = parts.flatMap((p) => p.variables);
    const placement = placeDenseVariables(new Map(all.map((v) => [v.name, v.values.length])), numShards);
    const mine = all.filter((v) => placement.shardOf.get(v.name) === shardIndex);
    this.#variables = undefined;
    if (parts.length > 0) this.declare(mine);
    this.optimizer.slots.clear();
    for (const part of parts)
      for (const [variable, byName] of part.slots)
        if (placement.shardOf.get(variable) === shardIndex)
          this.optimizer.slots.set(variable, new Map(byName));
    this.optimizer.step = parts[0]?.optimizerStep ?? 0;
    this.#pending.clear();
    this.#pushes = 0;
    this.#version = checkSafeInteger(version, 'version');
    this.#wake();
  }

  #apply(gradients: readonly (readonly [string, Float32Array])[], lrScale: number): void {
    const variables = this.#held();
    this.optimizer.beginStep();
    for (const [name, gradient] of gradients)
      this.optimizer.apply(name, (variables.get(name) as { values: Float32Array }).values, gradient, lrScale);
  }

  #held(): Map<string, { readonly shape: readonly number[]; readonly values: Float32Array }> {
    if (this.#variables === undefined)
      throw new ParameterStoreError(
        'NO_DENSE_VARIABLES',
        'This parameter-server shard holds no dense variables: workers declare them before their first step',
      );
    return this.#variables;
  }

  #wake(): void {
    const ready = this.#waiters.filter((w) => w.minVersion <= this.#version || this.#variables === undefined);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => !ready.includes(w));
    for (const w of ready) w.wake();
  }
}
