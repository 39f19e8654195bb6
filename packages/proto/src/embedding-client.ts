import { checkInteger, checkNonEmptyString } from '@edl/common';
import type { Client, MethodDefinition } from '@grpc/grpc-js';
import { bytesToFloats, floatsToBytes, idsToBytes } from './embedding-codec.js';
import { EdlProtoError, grpcStatusName } from './errors.js';
import type {
  DescribeShardResponse,
  PullEmbeddingsResponse,
  PushEmbeddingGradientsResponse,
} from './generated/edl/v1/ps_pb.js';
import { DEFAULT_MAX_MESSAGE_BYTES } from './grpc-service.js';
import { createMasterChannel } from './master-channel.js';
import { parameterServerServiceDefinition } from './parameter-server-definition.js';
import { unaryCall } from './unary-transport.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/** Options of an {@link EmbeddingClient}. */
export interface EmbeddingClientOptions {
  /** host:port of each parameter-server shard, shard i at index i. */
  readonly addresses: readonly string[];
  /** The job token every call carries. */
  readonly token: string;
  /**
   * The shard of row `id` among `numShards`: `shardOfId` of @edl/ps, passed in because @edl/proto
   * sits below @edl/ps. A shard refuses ids that are not its own, so a wrong function fails loudly.
   */
  readonly shardOfId: (id: number, numShards: number) => number;
  /** Deadline of each call in milliseconds (default 30 000). */
  readonly deadlineMs?: number;
  /** Largest message either way, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
}

/** What one shard said about itself ({@link EmbeddingClient.describe}). */
export interface ShardDescription {
  readonly shardIndex: number;
  readonly numShards: number;
  readonly tables: readonly {
    readonly name: string;
    readonly dim: number;
    readonly rows: number;
    readonly bytes: number;
    readonly optimizer: string;
    readonly pushes: number;
    readonly maxModelVersion: number;
  }[];
}

/** A table a worker's model uses, as it declares it to the shards ({@link EmbeddingClient.declareTables}). */
export interface DeclaredEmbeddingTable {
  readonly name: string;
  /** Floats per row. */
  readonly dim: number;
  /** How its rows start (default uniform in [-0.05, 0.05)). */
  readonly initializer?:
    | { readonly type: 'uniform'; readonly scale?: number }
    | { readonly type: 'normal'; readonly stddev?: number };
}

/** Accounting that goes with a gradient push. */
export interface EmbeddingPushInfo {
  readonly modelVersion: number;
  readonly workerId: string;
  /**
   * The pushes the step sends to each shard (its number of tables). Given, the push goes to every
   * shard, empty where none of `ids` is, and each shard counts it towards the worker's last step
   * ({@link EmbeddingClient.lastPushes}).
   */
  readonly stepPushes?: number;
}

/** What a shard applied of a worker's last step ({@link EmbeddingClient.lastPushes}). */
export interface WorkerLastPush {
  readonly modelVersion: number;
  /** The step's pushes to the shard, and those it applied. */
  readonly due: number;
  readonly applied: number;
}

/**
 * A failed call to a parameter-server shard: `code` is the gRPC status name, the message names the
 * method, the shard and its address.
 */
export class ShardRpcError extends EdlProtoError {
  override readonly name = 'ShardRpcError';
  constructor(
    readonly method: string,
    readonly shardIndex: number,
    readonly address: string,
    readonly grpcStatus: number,
    readonly details: string,
    options?: { cause?: unknown },
  ) {
    const code = grpcStatusName(grpcStatus);
    super(
      code,
      `${method} to parameter-server shard ${shardIndex} (${address}) failed with ${code}: ${details}`,
      options,
    );
  }
}

type Methods = typeof parameterServerServiceDefinition;
/** The request message of a ParameterServerService method. */
export type ShardRequestOf<K extends keyof Methods> = Parameters<Methods[K]['requestSerialize']>[0];
/** The response message of a ParameterServerService method. */
export type ShardResponseOf<K extends keyof Methods> = ReturnType<Methods[K]['responseDeserialize']>;
type RequestOf<K extends keyof Methods> = ShardRequestOf<K>;
type ResponseOf<K extends keyof Methods> = ShardResponseOf<K>;

/** Each shard's share of a call: its ids, and where each came from in the caller's array. */
interface ShardSplit {
  readonly shard: number;
  readonly ids: Float64Array;
  /** Caller index (push) or unique-id index (pull) of each of `ids`. */
  readonly from: Uint32Array;
}

/**
 * The worker's side of the embedding rows held by N parameter-server shards (ElasticDL's
 * parameter-server design): each call splits the ids by shard, calls the shards that hold any of
 * them in parallel, and puts the answers back in the caller's order.
 */
export class EmbeddingClient {
  readonly #channels: Client[];
  readonly #addresses: readonly string[];
  readonly #token: string;
  readonly #shardOfId: (id: number, numShards: number) => number;
  readonly #deadlineMs: number;

  constructor(options: EmbeddingClientOptions) {
    if (!Array.isArray(options?.addresses) || options.addresses.length === 0) {
      throw new RangeError('Expected at least one parameter-server shard address in options.addresses');
    }
    this.#addresses = options.addresses.map((a, i) => checkNonEmptyString(a, `options.addresses[${i}]`));
    this.#token = checkNonEmptyString(options.token, 'options.token');
    if (typeof options.shardOfId !== 'function')
      throw new TypeError('Expected a function for options.shardOfId (shardOfId of @edl/ps)');
    this.#shardOfId = options.shardOfId;
    this.#deadlineMs = checkInteger(options.deadlineMs ?? 30_000, 'options.deadlineMs', 1);
    const maxBytes = checkInteger(
      options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
      'options.maxMessageBytes',
      1024,
    );
    this.#channels = this.#addresses.map((address) => createMasterChannel(address, maxBytes));
  }

  /** Number of shards. */
  get numShards(): number {
    return this.#addresses.length;
  }

  /**
   * The rows of `ids` of `table`, `[ids.length, dim]` row-major in the order of `ids` (duplicates
   * included, each id pulled once). `create: false` (evaluation, prediction) creates no row: an
   * unknown id reads as the initializer's value for it.
   */
  async pull(
    table: string,
    ids: Float64Array,
    options: { readonly create?: boolean } = {},
  ): Promise<Float32Array> {
    checkNonEmptyString(table, 'table');
    const uniqueOf = new Map<number, number>();
    const unique: number[] = [];
    const uniqueIndex = new Uint32Array(ids.length);
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i] as number;
      let u = uniqueOf.get(id);
      if (u === undefined) {
        u = unique.length;
        uniqueOf.set(id, u);
        unique.push(id);
      }
      uniqueIndex[i] = u;
    }
    const splits = this.#split(Float64Array.from(unique));
    const answers = await Promise.all(
      splits.map((split) =>
        this.#call('pullEmbeddings', split.shard, {
          $typeName: 'edl.v1.PullEmbeddingsRequest',
          table,
          ids: idsToBytes(split.ids),
          create: options.create !== false,
        }),
      ),
    );
    const dim = this.#agreedDim(table, splits, answers);
    // Row of each unique id: (the answer it is in, its row there).
    const uniqueRows: Float32Array[] = new Array(unique.length);
    const uniqueAt = new Uint32Array(unique.length);
    splits.forEach((split, s) => {
      const rows = bytesToFloats(
        (answers[s] as PullEmbeddingsResponse).rows,
        `the rows from shard ${split.shard}`,
      );
      for (let j = 0; j < split.from.length; j++) {
        uniqueRows[split.from[j] as number] = rows;
        uniqueAt[split.from[j] as number] = j * dim;
      }
    });
    const out = new Float32Array(ids.length * dim);
    for (let i = 0; i < ids.length; i++) {
      const u = uniqueIndex[i] as number;
      const at = uniqueAt[u] as number;
      out.set((uniqueRows[u] as Float32Array).subarray(at, at + dim), i * dim);
    }
    return out;
  }

  /**
   * Pushes `gradients` (`[ids.length, dim]` row-major) for the rows of `ids` of `table`, each id to
   * its shard, in parallel. Duplicate ids go to the same shard, which sums their gradients.
   * Resolves to each called shard's answer once every shard applied its part.
   */
  async push(
    table: string,
    ids: Float64Array,
    gradients: Float32Array,
    info: EmbeddingPushInfo,
  ): Promise<{ readonly shard: number; readonly pushes: number; readonly rows: number }[]> {
    checkNonEmptyString(table, 'table');
    const stepPushes = info.stepPushes === undefined ? 0 : checkInteger(info.stepPushes, 'stepPushes', 1);
    if (ids.length === 0 && stepPushes === 0) return [];
    const dim = ids.length === 0 ? 0 : gradients.length / ids.length;
    if (!Number.isInteger(dim) || (dim === 0 && ids.length > 0)) {
      throw new RangeError(
        `Expected a whole number of gradient values per id for the ${ids.length} ids pushed to embedding table '${table}' but received ${gradients.length} values`,
      );
    }
    const modelVersion = toWireInt(info.modelVersion, 'modelVersion');
    const splits = this.#split(ids, stepPushes > 0);
    const answers = await Promise.all(
      splits.map((split) => {
        const part = new Float32Array(split.ids.length * dim);
        for (let j = 0; j < split.from.length; j++) {
          const at = (split.from[j] as number) * dim;
          part.set(gradients.subarray(at, at + dim), j * dim);
        }
        return this.#call('pushEmbeddingGradients', split.shard, {
          $typeName: 'edl.v1.PushEmbeddingGradientsRequest',
          table,
          ids: idsToBytes(split.ids),
          gradients: floatsToBytes(part),
          modelVersion,
          workerId: info.workerId,
          stepPushes,
        });
      }),
    );
    return answers.map((a: PushEmbeddingGradientsResponse, s) => ({
      shard: (splits[s] as ShardSplit).shard,
      pushes: toSafeNumber(a.pushes, 'pushes'),
      rows: toSafeNumber(a.rows, 'rows'),
    }));
  }

  /**
   * Declares `tables` to every shard, in parallel: each shard holds rows of every table, so each
   * must know them all. Idempotent; a table a shard knows with another dim or initializer fails
   * the call (FAILED_PRECONDITION, naming the table and both values).
   */
  async declareTables(tables: readonly DeclaredEmbeddingTable[], workerId: string): Promise<void> {
    const request = {
      $typeName: 'edl.v1.DeclareEmbeddingTablesRequest' as const,
      workerId,
      tables: tables.map((t) => ({
        $typeName: 'edl.v1.EmbeddingTableDeclaration' as const,
        name: t.name,
        dim: t.dim,
        ...(t.initializer === undefined
          ? {}
          : {
              initializer: {
                $typeName: 'edl.v1.EmbeddingInitializer' as const,
                type: t.initializer.type,
                scale: t.initializer.type === 'uniform' ? (t.initializer.scale ?? 0) : 0,
                stddev: t.initializer.type === 'normal' ? (t.initializer.stddev ?? 0) : 0,
              },
            }),
      })),
    };
    await Promise.all(
      this.#addresses.map((_, shard) => this.#call('declareEmbeddingTables', shard, request)),
    );
  }

  /**
   * Has every shard write its part of the checkpoint of model `version` in `dir` (SaveShard), in
   * parallel; resolves to each shard's marker path, in shard order, once all are written.
   */
  async saveShards(version: number, dir: string): Promise<string[]> {
    const answers = await Promise.all(
      this.#addresses.map((_, shard) =>
        this.#call('saveShard', shard, {
          $typeName: 'edl.v1.SaveShardRequest',
          version: toWireInt(version, 'version'),
          dir,
        }),
      ),
    );
    return answers.map((a) => a.marker);
  }

  /**
   * Has every shard replace its rows by its share of the checkpoint of `version` in `dir`
   * (RestoreShard), or, with `version` undefined, empty its tables (the job's initial state);
   * resolves to the rows each shard holds then. Dense variables on the shards take version
   * `denseVersion` (default: `version`, 0 with a reset).
   */
  async restoreShards(version: number | undefined, dir: string, denseVersion?: number): Promise<number[]> {
    const answers = await Promise.all(
      this.#addresses.map((_, shard) =>
        this.#call('restoreShard', shard, {
          $typeName: 'edl.v1.RestoreShardRequest',
          version: toWireInt(version ?? 0, 'version'),
          dir,
          reset: version === undefined,
          ...(denseVersion === undefined ? {} : { modelVersion: toWireInt(denseVersion, 'denseVersion') }),
        }),
      ),
    );
    return answers.map((a) => toSafeNumber(a.rows, 'rows'));
  }

  /**
   * Every shard's description, in shard order, after checking that shard i says it is shard i of
   * this many: a shard started with another index or count would hold rows this client never asks
   * it for.
   */
  async describe(): Promise<ShardDescription[]> {
    const answers = await Promise.all(
      this.#addresses.map((_, shard) =>
        this.#call('describeShard', shard, { $typeName: 'edl.v1.DescribeShardRequest', workerId: '' }),
      ),
    );
    return answers.map((a: DescribeShardResponse, shard) => {
      if (a.shardIndex !== shard || a.numShards !== this.numShards) {
        throw new EdlProtoError(
          'BAD_RESPONSE',
          `The parameter server at ${this.#addresses[shard]} is shard ${a.shardIndex} of ${a.numShards}, but this client has it as shard ${shard} of ${this.numShards}`,
        );
      }
      return {
        shardIndex: a.shardIndex,
        numShards: a.numShards,
        tables: a.tables.map((t) => ({
          name: t.name,
          dim: t.dim,
          rows: toSafeNumber(t.rows, `table '${t.name}' rows`),
          bytes: toSafeNumber(t.bytes, `table '${t.name}' bytes`),
          optimizer: t.optimizer,
          pushes: toSafeNumber(t.pushes, `table '${t.name}' pushes`),
          maxModelVersion: toSafeNumber(t.maxModelVersion, `table '${t.name}' maxModelVersion`),
        })),
      };
    });
  }

  /**
   * What each shard, in shard order, applied of `workerId`'s last step: undefined where it
   * remembers none, the error where it could not be asked.
   */
  async lastPushes(workerId: string): Promise<(WorkerLastPush | undefined | Error)[]> {
    checkNonEmptyString(workerId, 'workerId');
    const answers = await Promise.allSettled(
      this.#addresses.map((_, shard) =>
        this.#call('describeShard', shard, { $typeName: 'edl.v1.DescribeShardRequest', workerId }),
      ),
    );
    return answers.map((answer) => {
      if (answer.status === 'rejected')
        return answer.reason instanceof Error ? answer.reason : new Error(String(answer.reason));
      const last = answer.value.lastPush;
      return last === undefined
        ? undefined
        : {
            modelVersion: toSafeNumber(last.modelVersion, 'lastPush.modelVersion'),
            due: last.due,
            applied: last.applied,
          };
    });
  }

  /** Closes the channels; calls in flight fail with CANCELLED. */
  close(): void {
    for (const channel of this.#channels) channel.close();
  }

  /**
   * `ids` grouped by shard (shards with none left out unless `everyShard`), each id remembering its
   * index in `ids`.
   */
  #split(ids: Float64Array, everyShard = false): ShardSplit[] {
    const n = this.numShards;
    const shardOf = new Uint32Array(ids.length);
    const counts = new Uint32Array(n);
    for (let i = 0; i < ids.length; i++) {
      const shard = this.#shardOfId(ids[i] as number, n);
      shardOf[i] = shard;
      counts[shard] = (counts[shard] as number) + 1;
    }
    const splits: { shard: number; ids: Float64Array; from: Uint32Array; filled: number }[] = [];
    const splitOf: (number | undefined)[] = new Array(n);
    for (let shard = 0; shard < n; shard++) {
      const count = counts[shard] as number;
      if (count === 0 && !everyShard) continue;
      splitOf[shard] = splits.length;
      splits.push({ shard, ids: new Float64Array(count), from: new Uint32Array(count), filled: 0 });
    }
    for (let i = 0; i < ids.length; i++) {
      const split = splits[splitOf[shardOf[i] as number] as number] as (typeof splits)[number];
      split.ids[split.filled] = ids[i] as number;
      split.from[split.filled++] = i;
    }
    return splits;
  }

  /** The rows' width all shards answered with, checked against each answer's length. */
  #agreedDim(
    table: string,
    splits: readonly ShardSplit[],
    answers: readonly PullEmbeddingsResponse[],
  ): number {
    let dim = 0;
    answers.forEach((answer, s) => {
      const split = splits[s] as ShardSplit;
      if (
        (dim !== 0 && answer.dim !== dim) ||
        answer.dim === 0 ||
        answer.rows.length !== split.ids.length * answer.dim * 4
      ) {
        throw new EdlProtoError(
          'BAD_RESPONSE',
          `Parameter-server shard ${split.shard} (${this.#addresses[split.shard]}) answered a pull of ${split.ids.length} rows of embedding table '${table}' with dim ${answer.dim} and ${answer.rows.length} bytes${dim === 0 ? '' : `; other shards said dim ${dim}`}`,
        );
      }
      dim = answer.dim;
    });
    return dim;
  }

  /**
   * One call of `method` to shard `shard` with the job token (DenseShardsClient's calls); a
   * failure is a {@link ShardRpcError}.
   */
  callShard<K extends keyof Methods>(
    method: K,
    shard: number,
    request: RequestOf<K>,
  ): Promise<ResponseOf<K>> {
    return this.#call(method, shard, request);
  }

  #call<K extends keyof Methods>(method: K, shard: number, request: RequestOf<K>): Promise<ResponseOf<K>> {
    const address = this.#addresses[shard] as string;
    return unaryCall(
      this.#channels[shard] as Client,
      parameterServerServiceDefinition[method] as unknown as MethodDefinition<RequestOf<K>, ResponseOf<K>>,
      request,
      this.#token,
      this.#deadlineMs,
      (code, details, cause) =>
        new ShardRpcError(String(method), shard, address, code, details, cause && { cause }),
    );
  }
}
