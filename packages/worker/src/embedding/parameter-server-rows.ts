import { closeSync, openSync } from 'node:fs';
import {
  type DeclaredEmbeddingTable,
  type DensePull,
  type DenseUpdateRef,
  type EmbeddingClient,
  type NamedTensor,
  ShardRpcError,
} from '@edl/proto';
import type * as tflTypes from '@tensorflow/tfjs-layers';
import { silentLogger, type WorkerLogger } from '../logger.js';
import type { DenseOnShards } from '../steps/dense-on-shards.js';
import { EmbeddingError, type RowGradients } from './embedding-context.js';
import type { EmbeddingRowSource } from './embedding-step.js';
import { embeddingFeeds } from './embedding-step.js';

/**
 * The tables the distributed embedding layers of `model` use, each once, as a worker declares them
 * to the parameter-server shards. Layers that share a table must agree on its dim and initializer
 * (TABLE_MISMATCH otherwise).
 */
export function modelEmbeddingTables(model: tflTypes.LayersModel): DeclaredEmbeddingTable[] {
  const tables = new Map<string, { table: DeclaredEmbeddingTable; layer: string }>();
  for (const { layer } of embeddingFeeds(model)) {
    const table: DeclaredEmbeddingTable = {
      name: layer.table,
      dim: layer.outputDim,
      ...(layer.initializer === undefined ? {} : { initializer: layer.initializer }),
    };
    const known = tables.get(layer.table);
    if (known === undefined) tables.set(layer.table, { table, layer: layer.name });
    else if (JSON.stringify(known.table) !== JSON.stringify(table))
      throw new EmbeddingError(
        'TABLE_MISMATCH',
        `Layers '${known.layer}' and '${layer.name}' share table '${layer.table}' but declare it differently (${JSON.stringify(known.table)} and ${JSON.stringify(table)})`,
      );
  }
  return [...tables.values()].map((t) => t.table);
}

/** Options of {@link ParameterServerRows}. */
export interface ParameterServerRowsOptions {
  /** The client of the job's shards (`--ps-addresses`). */
  readonly client: EmbeddingClient;
  /** The tables of the worker's model ({@link modelEmbeddingTables}). */
  readonly tables: readonly DeclaredEmbeddingTable[];
  readonly workerId: string;
  /**
   * How long a shard may be unreachable (a shard being relaunched) before a pull or a push fails
   * (default 60 000 ms).
   */
  readonly unavailableMs?: number;
  readonly logger?: WorkerLogger;
  /** The model's dense variables, when the job holds them on the shards too. */
  readonly dense?: DenseOnShards;
}

/**
 * A worker's parameter-server shards as its steps use them: the model's tables declared before the
 * first pull (again after a shard lost them in a relaunch), rows pulled (created for training,
 * looked up for evaluation and prediction) and rows gradients pushed, every shard in parallel.
 */
export class ParameterServerRows implements EmbeddingRowSource {
  readonly #o: ParameterServerRowsOptions;
  readonly #logger: WorkerLogger;
  #declared: Promise<void> | undefined;
  /** Steps pushed so far (for the test-only exits). */
  #pushes = 0;

  constructor(options: ParameterServerRowsOptions) {
    this.#o = options;
    this.#logger = options.logger ?? silentLogger;
  }

  /** Whether the model has distributed embedding tables (else the shards hold only dense variables). */
  get hasTables(): boolean {
    return this.#o.tables.length > 0;
  }

  /**
   * Declares the model's tables, and its dense variables where the shards hold them, to every
   * shard, once (both declarations are idempotent).
   */
  declare(): Promise<void> {
    const { client, tables, workerId, dense } = this.#o;
    this.#declared ??= Promise.all([
      tables.length === 0 ? undefined : client.declareTables(tables, workerId),
      dense?.declare(),
    ]).then(
      () => undefined,
      (error: unknown) => {
        this.#declared = undefined;
        throw error;
      },
    );
    return this.#declared;
  }

  /** The dense variables from every shard (see {@link DenseOnShards.pull}). */
  pullDense(dense: DenseOnShards, forTraining: boolean): Promise<DensePull> {
    return this.#call('pull', () => dense.pull(forTraining));
  }

  rows(table: string, ids: Float64Array, _dim: number, forTraining: boolean): Promise<Float32Array> {
    return this.#call('pull', () => this.#o.client.pull(table, ids, { create: forTraining }));
  }

  /**
   * Pushes each table's rows gradient to every shard (empty where the shard holds none of its ids),
   * and with `dense` each shard its part of the step's dense gradient, all in parallel, each push
   * saying how many the step sends to that shard: so
   * the master can ask the shards whether a lost worker's last step reached them whole
   * (docs/master.md). Only an unreachable shard (the request never arrived) is retried: a push
   * whose answer was lost is not sent again, so no rows gradient is applied twice.
   */
  async push(
    rows: readonly RowGradients[],
    modelVersion: number,
    dense?: { readonly gradients: readonly NamedTensor[]; readonly update: DenseUpdateRef },
  ): Promise<void> {
    const push = ++this.#pushes;
    exitAtPushForTests('EDL_TEST_EXIT_BEFORE_PUSH', push);
    const denseShards = this.#o.dense;
    const stepPushes = rows.length + (dense === undefined ? 0 : 1);
    const info = { modelVersion, workerId: this.#o.workerId, stepPushes };
    await Promise.all([
      ...rows.map((r) => this.#call('push', () => this.#o.client.push(r.table, r.ids, r.gradients, info))),
      dense === undefined || denseShards === undefined
        ? undefined
        : denseShards.push(dense.gradients, modelVersion, dense.update, stepPushes, (push) =>
            this.#call('push', push),
          ),
    ]);
    exitAtPushForTests('EDL_TEST_EXIT_AFTER_PUSH', push);
  }

  /** Closes the channels to the shards. */
  close(): void {
    this.#o.client.close();
  }

  /**
   * Runs `call` after the declaration, retrying while a shard is UNAVAILABLE (for up to
   * `unavailableMs`) and declaring again when a shard no longer knows a table (NOT_FOUND: it was
   * relaunched before the job's first checkpoint, so it starts with no tables).
   */
  async #call<T>(what: string, call: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + (this.#o.unavailableMs ?? 60_000);
    let redeclared = false;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.declare();
        return await call();
      } catch (error) {
        if (!(error instanceof ShardRpcError) || Date.now() >= deadline) throw error;
        if (error.code === 'NOT_FOUND' && !redeclared) {
          // Once per call: a table the model does not declare stays unknown however often it is.
          redeclared = true;
          this.#logger.warn('ps.redeclare', { shard: error.shardIndex, error: error.details });
          this.#declared = undefined;
        } else if (error.code !== 'UNAVAILABLE') throw error;
        const delayMs = Math.min(2000, 100 * 2 ** Math.min(attempt - 1, 5));
        this.#logger.warn('ps.retry', { what, shard: error.shardIndex, attempt, delayMs, error: error.code });
        await new Promise((resolve) => setTimeout(resolve, delayMs));
      }
    }
  }
}

/**
 * TEST ONLY: with `EDL_TEST_EXIT_BEFORE_PUSH=FILE:N` (or `EDL_TEST_EXIT_AFTER_PUSH=FILE:N`), the
 * first worker to reach its Nth step's rows push creates FILE and SIGKILLs itself just before
 * sending it (just after every shard answered it): the master accepted that step's dense gradient
 * and hears nothing more from the worker, and the step's rows update never reaches the shards (or
 * reached them whole). Other workers, and relaunched ones, find FILE and go on as usual
 * (packages/cli/test/ps-train.test.ts).
 */
function exitAtPushForTests(variable: string, push: number): void {
  const hook = process.env[variable];
  if (hook === undefined || hook === '') return;
  const at = hook.lastIndexOf(':');
  if (Number(hook.slice(at + 1)) !== push) return;
  try {
    closeSync(openSync(hook.slice(0, at), 'wx'));
  } catch {
    return; // another worker took the exit
  }
  process.kill(process.pid, 'SIGKILL');
}
