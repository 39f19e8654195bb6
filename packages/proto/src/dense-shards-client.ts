import { checkInteger } from '@edl/common';
import type { EmbeddingClient } from './embedding-client.js';
import { fromTensorMessage, type NamedTensor, toTensorMessage } from './tensor.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/** The update a dense gradient joins, as the master's answer to its step named it. */
export interface DenseUpdateRef {
  /** The model version the update makes. */
  readonly version: number;
  /** The gradients it averages (sync: gradsToWait; async: 1). */
  readonly gradients: number;
  /** The learning rate's divisor (async staleness modulation; 1 otherwise). */
  readonly lrDivisor: number;
}

/** Accounting and update of one step's dense push ({@link DenseShardsClient.push}). */
export interface DensePushInfo {
  /** The version the gradient was computed at. */
  readonly modelVersion: number;
  readonly workerId: string;
  /** The step's pushes to each shard, this one included (PushEmbeddingGradients' step_pushes). */
  readonly stepPushes: number;
  readonly update: DenseUpdateRef;
}

/** What {@link DenseShardsClient.pull} assembled. */
export interface DensePull {
  /** The lowest version a shard answered: every shard has applied at least this update. */
  readonly version: number;
  /** Each shard's version, in shard order. */
  readonly versions: readonly number[];
  /** Every shard's variables, in shard order. */
  readonly variables: NamedTensor[];
}

/**
 * The worker's side of the dense variables placed on the parameter-server shards: each call goes
 * to every shard in parallel, each with its own variables (`perShard[i]`: shard i's, as
 * `placeDenseVariables` of @edl/ps places them).
 */
export class DenseShardsClient {
  readonly #client: EmbeddingClient;

  constructor(client: EmbeddingClient) {
    this.#client = client;
  }

  get numShards(): number {
    return this.#client.numShards;
  }

  /** Declares each shard's variables with their initial values; a shard that holds some keeps them. */
  async declare(
    perShard: readonly (readonly NamedTensor[])[],
    workerId: string,
    modelVersion: number,
  ): Promise<void> {
    this.#checkShards(perShard);
    await Promise.all(
      perShard.map((variables, shard) =>
        this.#client.callShard('declareDenseVariables', shard, {
          $typeName: 'edl.v1.DeclareDenseVariablesRequest',
          variables: variables.map((v) => toTensorMessage(v, { copy: false })),
          workerId,
          modelVersion: toWireInt(modelVersion, 'modelVersion'),
        }),
      ),
    );
  }

  /**
   * Pushes each shard its part of one step's dense gradient, all in parallel; `each` runs every
   * shard's push (a caller that retries an unreachable shard retries that shard alone: a push
   * another shard applied must not go to it again).
   */
  async push(
    perShard: readonly (readonly NamedTensor[])[],
    info: DensePushInfo,
    each: (push: () => Promise<unknown>) => Promise<unknown> = (push) => push(),
  ): Promise<void> {
    this.#checkShards(perShard);
    checkInteger(info.stepPushes, 'stepPushes', 1);
    await Promise.all(
      perShard.map((gradients, shard) =>
        each(() =>
          this.#client.callShard('pushDenseGradients', shard, {
            $typeName: 'edl.v1.PushDenseGradientsRequest',
            gradients: gradients.map((g) => toTensorMessage(g, { copy: false })),
            modelVersion: toWireInt(info.modelVersion, 'modelVersion'),
            workerId: info.workerId,
            stepPushes: info.stepPushes,
            updateVersion: toWireInt(info.update.version, 'updateVersion'),
            updateGradients: toWireInt(info.update.gradients, 'updateGradients'),
            updateLrDivisor: toWireInt(info.update.lrDivisor, 'updateLrDivisor'),
          }),
        ),
      ),
    );
  }

  /**
   * Every shard's variables once it applied update `minVersion` (each waits up to `waitMs`). With
   * `consistent` (sync mode), a shard that answered an older version than another is asked again
   * for the newest, so that a step never computes on parts of two versions unless a shard still
   * lacks it after `waitMs`.
   */
  async pull(minVersion: number, waitMs: number, consistent: boolean): Promise<DensePull> {
    const one = async (shard: number, min: number) => {
      const answer = await this.#client.callShard('pullDenseVariables', shard, {
        $typeName: 'edl.v1.PullDenseVariablesRequest',
        minVersion: toWireInt(min, 'minVersion'),
        waitMs,
      });
      return {
        version: toSafeNumber(answer.version, 'version'),
        variables: answer.variables.map((t) => fromTensorMessage(t)),
      };
    };
    const answers = await Promise.all(
      Array.from({ length: this.numShards }, (_, shard) => one(shard, minVersion)),
    );
    if (consistent) {
      const newest = Math.max(...answers.map((a) => a.version));
      await Promise.all(
        answers.map(async (a, shard) => {
          if (a.version < newest) answers[shard] = await one(shard, newest);
        }),
      );
    }
    const versions = answers.map((a) => a.version);
    return { version: Math.min(...versions), versions, variables: answers.flatMap((a) => a.variables) };
  }

  #checkShards(perShard: readonly unknown[]): void {
    if (perShard.length !== this.numShards)
      throw new RangeError(
        `Expected the dense variables of ${this.numShards} parameter-server shards but received ${perShard.length}`,
      );
  }
}
