import { createOptimizer, type Optimizer, type OptimizerConfig } from '@edl/common';
import { type ModelSnapshot, modelChecksum, type NamedTensor } from '@edl/proto';
import { WorkerError } from './errors.js';

/**
 * A worker's copy of the master's model and optimizer, advanced by the worker's own gradients with
 * the master's own optimizer code (@edl/common), so that after an update the master applied alone
 * (a `mirrored` answer) it holds the master's next version bit for bit without receiving it. This
 * is what an all-reduce replica does with its peers' gradients, for the one case a parameter
 * server can predict: a worker training alone, or whose gradient was the whole update.
 */
export class ModelReplica {
  /** The variables, in the master's order (the order of its checksum). */
  readonly variables: readonly NamedTensor[];
  readonly #optimizer: Optimizer;
  readonly #byName: ReadonlyMap<string, NamedTensor>;
  /** The master's version this replica holds. */
  version: number;
  /** Two sets of arrays that {@link copies} fills in turn. */
  readonly #copySets: Array<Float32Array[] | undefined> = [undefined, undefined];
  #copyTurn = 0;

  private constructor(variables: NamedTensor[], optimizer: Optimizer, version: number) {
    this.variables = variables;
    this.#optimizer = optimizer;
    this.#byName = new Map(variables.map((v) => [v.name, v]));
    this.version = version;
  }

  /**
   * The replica of a pulled model that came with its optimizer (`getModel` with `wantOptimizer`);
   * undefined when the master sent none (its updates cannot be mirrored). The snapshot's arrays are
   * copied: the caller may hand them on.
   */
  static fromSnapshot(snapshot: ModelSnapshot): ModelReplica | undefined {
    const state = snapshot.optimizer;
    if (state === undefined || snapshot.unchanged === true) return undefined;
    let optimizer: Optimizer;
    try {
      optimizer = createOptimizer(state.config as unknown as OptimizerConfig);
    } catch (error) {
      throw new WorkerError(
        'MASTER_ERROR',
        `The master sent an optimizer this worker cannot mirror: ${(error as Error).message}`,
      );
    }
    const variables = snapshot.variables.map((v) => ({
      name: v.name,
      shape: v.shape,
      values: Float32Array.from(v.values),
    }));
    const lengths = new Map(variables.map((v) => [v.name, v.values.length]));
    for (const slot of state.slots) {
      const cut = slot.name.lastIndexOf('/');
      const variable = slot.name.slice(0, Math.max(0, cut));
      if (cut <= 0 || lengths.get(variable) !== slot.values.length) {
        throw new WorkerError(
          'MASTER_ERROR',
          `The master sent optimizer slot '${slot.name}' (${slot.values.length} values), which fits no variable`,
        );
      }
      let byName = optimizer.slots.get(variable);
      if (byName === undefined) {
        byName = new Map();
        optimizer.slots.set(variable, byName);
      }
      byName.set(slot.name.slice(cut + 1), Float32Array.from(slot.values));
    }
    optimizer.step = state.step;
    return new ModelReplica(variables, optimizer, snapshot.version);
  }

  /**
   * Applies one gradient as the master applies a gradient that is the whole update: one optimizer
   * step, then each variable in the gradients' order, learning-rate scale 1. The gradients must be
   * exactly the ones sent, in the order sent.
   */
  apply(gradients: readonly NamedTensor[]): void {
    for (const g of gradients) {
      const variable = this.#byName.get(g.name);
      if (variable === undefined || variable.values.length !== g.values.length) {
        throw new WorkerError(
          'MODEL_DEF_INVALID',
          `The gradient of '${g.name}' fits no variable of the master's model`,
        );
      }
    }
    this.#optimizer.beginStep();
    for (const g of gradients) {
      const variable = this.#byName.get(g.name) as NamedTensor;
      this.#optimizer.apply(g.name, variable.values, g.values);
    }
    this.version++;
  }

  /**
   * The variables copied into the other of two sets of arrays, for a backend to take as the
   * model's new values: the CPU backend keeps the array it is given, while the replica changes in
   * place, and the set handed out the time before is still the model's until these replace it. Two
   * fixed sets, not a new array per variable and step: V8 counts every new ArrayBuffer towards its
   * next full collection, and a worker allocating a model's worth per step ran one every few steps.
   */
  copies(): NamedTensor[] {
    this.#copyTurn ^= 1;
    let set = this.#copySets[this.#copyTurn];
    if (set === undefined) {
      set = this.variables.map((v) => new Float32Array(v.values.length));
      this.#copySets[this.#copyTurn] = set;
    }
    const arrays = set;
    return this.variables.map((v, i) => {
      const values = arrays[i] as Float32Array;
      values.set(v.values);
      return { name: v.name, shape: v.shape, values };
    });
  }

  /** `modelChecksum` of the variables, to compare with a `mirrored` answer's. */
  checksum(): number {
    return modelChecksum(this.variables.map((v) => v.values));
  }
}
