import type { DensePull, DenseShardsClient, DenseUpdateRef, NamedTensor } from '@edl/proto';

/**
 * How dense variables are placed on the shards: `placeDenseVariables` of @edl/ps, passed in (as
 * `shardOfId` is to the EmbeddingClient) because @edl/worker does not depend on @edl/ps. The
 * master, the shards (when they restore a checkpoint under another shard count) and every worker
 * place by the same function of the variables' names and sizes, so they agree without asking.
 */
export type DensePlacementFunction = (
  sizes: ReadonlyMap<string, number>,
  numShards: number,
) => { readonly shardOf: ReadonlyMap<string, number> };

/** How long a shard may take to apply the update a pull asks for before it answers what it has. */
const PULL_WAIT_MS = 10_000;

/**
 * A worker's dense variables held by the parameter-server shards (a job with dense variables on
 * the shards): the master's initial variables declared to the shards (the first declaration of
 * each shard wins), each step's dense gradient split by shard and pushed with the update the
 * master's answer named, and the model pulled from every shard in parallel.
 */
export class DenseOnShards {
  readonly #client: DenseShardsClient;
  readonly #place: DensePlacementFunction;
  readonly #workerId: string;
  /** The master's variables when this worker first pulled: the values a shard starts from. */
  #initial: { readonly variables: readonly NamedTensor[]; readonly version: number } | undefined;
  #shardOf: ReadonlyMap<string, number> | undefined;
  /** Sync mode (updates of several gradients): a pull re-asks a shard behind another. */
  #consistent = false;
  /** The highest model version the master named: what a training pull asks the shards for. */
  #masterVersion = 0;

  constructor(client: DenseShardsClient, place: DensePlacementFunction, workerId: string) {
    this.#client = client;
    this.#place = place;
    this.#workerId = workerId;
  }

  /** Whether the master's initial variables are known (the first pull took them). */
  get initialized(): boolean {
    return this.#initial !== undefined;
  }

  /** Takes the master's variables (its initial ones: with dense on the shards it never updates them). */
  setInitial(variables: readonly NamedTensor[], version: number): void {
    this.#initial = { variables, version };
    this.#shardOf = this.#place(
      new Map(variables.map((v) => [v.name, v.values.length])),
      this.#client.numShards,
    ).shardOf;
    this.sawMasterVersion(version);
  }

  /** A version the master answered with: pulls ask the shards for at least the highest. */
  sawMasterVersion(version: number): void {
    this.#masterVersion = Math.max(this.#masterVersion, version);
  }

  /** Declares each shard's initial variables (again after a shard lost them in a relaunch). */
  declare(): Promise<void> {
    const initial = this.#initial;
    if (initial === undefined) return Promise.resolve();
    return this.#client.declare(this.#split(initial.variables), this.#workerId, initial.version);
  }

  /** The model from every shard: for training at least the master's latest version; else what they hold. */
  pull(forTraining: boolean): Promise<DensePull> {
    return this.#client.pull(
      forTraining ? this.#masterVersion : 0,
      forTraining ? PULL_WAIT_MS : 0,
      this.#consistent,
    );
  }

  /**
   * Pushes each shard its part of a step's dense gradient, as part of `update`; `stepPushes` counts
   * this push with the step's rows pushes to each shard; `each` runs each shard's push (retries).
   */
  push(
    gradients: readonly NamedTensor[],
    modelVersion: number,
    update: DenseUpdateRef,
    stepPushes: number,
    each?: (push: () => Promise<unknown>) => Promise<unknown>,
  ): Promise<void> {
    this.#consistent = update.gradients > 1;
    return this.#client.push(
      this.#split(gradients),
      { modelVersion, workerId: this.#workerId, stepPushes, update },
      each,
    );
  }

  #split(tensors: readonly NamedTensor[]): NamedTensor[][] {
    const shardOf = this.#shardOf;
    if (shardOf === undefined)
      throw new Error('The dense variables were pushed before the first pull placed them');
    const parts: NamedTensor[][] = Array.from({ length: this.#client.numShards }, () => []);
    for (const t of tensors) {
      const shard = shardOf.get(t.name);
      if (shard === undefined)
        throw new RangeError(`Expected a variable of the model for a dense tensor but received '${t.name}'`);
      (parts[shard] as NamedTensor[]).push(t);
    }
    return parts;
  }
}
