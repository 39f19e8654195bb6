import { checkInteger } from '@edl/common';
import {
  bindInsecure,
  bytesToFloats,
  bytesToIds,
  createGrpcServer,
  DEFAULT_MAX_MESSAGE_BYTES,
  type DeclareDenseVariablesRequest,
  type DeclareDenseVariablesResponse,
  type DeclareEmbeddingTablesRequest,
  type DeclareEmbeddingTablesResponse,
  type DescribeShardRequest,
  type DescribeShardResponse,
  type EmbeddingInitializer,
  floatsToBytes,
  fromTensorMessage,
  grpcError,
  jobTokenCheck,
  type PullDenseVariablesRequest,
  type PullDenseVariablesResponse,
  type PullEmbeddingsRequest,
  type PullEmbeddingsResponse,
  type PushDenseGradientsRequest,
  type PushDenseGradientsResponse,
  type PushEmbeddingGradientsRequest,
  type PushEmbeddingGradientsResponse,
  parameterServerServiceDefinition,
  type RestoreShardRequest,
  type RestoreShardResponse,
  type SaveShardRequest,
  type SaveShardResponse,
  shutdownGracefully,
  tokenCheckedUnary,
  toSafeNumber,
  toTensorMessage,
  toWireInt,
} from '@edl/proto';
import {
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from '@edl/proto/grpc';
import { ParameterStoreError } from '../errors.js';
import type { RowInitializerConfig } from '../sparse/row-initializer.js';
import { EmbeddingShard, type EmbeddingTableSpec, type JobTableSettings } from './embedding-shard.js';
import { restoreShardPart, saveShardPart } from './object-store-shard-checkpoint.js';
import { resetShard } from './shard-checkpoint.js';

/** Options of {@link startParameterServer}. */
export interface ParameterServerOptions {
  /** Interface to listen on (default 127.0.0.1: reachable from this machine only). */
  readonly host?: string;
  /** Port (default 0: any free port). */
  readonly port?: number;
  /** The job token every call must carry in the `x-edl-job-token` metadata. */
  readonly token: string;
  /** This shard's index, in [0, numShards). */
  readonly shardIndex: number;
  /** The job's number of parameter-server shards. */
  readonly numShards: number;
  /** The embedding tables this shard serves from the start (more come from workers' declarations). */
  readonly tables?: readonly EmbeddingTableSpec[];
  /** The optimizer and seed of the tables workers declare (DeclareEmbeddingTables). */
  readonly job?: JobTableSettings;
  /** Told of each table a declaration created, for the shard's log. */
  readonly onDeclared?: (table: string, workerId: string) => void;
  /** Largest message received or sent, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
  /**
   * Start from this shard's rows of a checkpoint's shard files (written by any number of shards),
   * read before the shard listens: how a relaunched or resumed job's shards get their rows back.
   */
  readonly restoreFrom?: { readonly dir: string; readonly version: number };
}

/** A running parameter-server shard. */
export interface ParameterServer {
  /** host:port to give workers. */
  readonly address: string;
  readonly port: number;
  /** The tables it serves, for checks and (later) checkpoints. */
  readonly shard: EmbeddingShard;
  /** Stops accepting calls, lets calls in flight finish for up to `graceMs`, then cuts the rest. */
  shutdown(graceMs?: number): Promise<void>;
}

/** The longest a dense pull waits for the update it asks for, whatever it asks. */
const MAX_DENSE_WAIT_MS = 60_000;

/**
 * Arguments are INVALID_ARGUMENT, an unknown table NOT_FOUND, another shard's id or a conflicting
 * declaration FAILED_PRECONDITION.
 */
function toStatus(error: unknown): Partial<ServiceError> {
  if (error instanceof RangeError || error instanceof TypeError)
    return grpcError(status.INVALID_ARGUMENT, error.message);
  if (error instanceof ParameterStoreError)
    return grpcError(
      error.code === 'UNKNOWN_TABLE' || error.code === 'NO_DENSE_VARIABLES'
        ? status.NOT_FOUND
        : status.FAILED_PRECONDITION,
      `${error.code}: ${error.message}`,
    );
  return grpcError(status.INTERNAL, error instanceof Error ? error.message : String(error));
}

/** A declared initializer off the wire: 0 is the default scale or standard deviation. */
function initializerOf(wire: EmbeddingInitializer, table: string): RowInitializerConfig {
  if (wire.type === 'uniform')
    return wire.scale === 0 ? { type: 'uniform' } : { type: 'uniform', scale: wire.scale };
  if (wire.type === 'normal')
    return wire.stddev === 0 ? { type: 'normal' } : { type: 'normal', stddev: wire.stddev };
  throw new RangeError(
    `Expected initializer type 'uniform' or 'normal' for embedding table '${table}' but received '${wire.type}'`,
  );
}

/**
 * Serves one parameter-server shard's embedding rows (the ParameterServerService of
 * edl/v1/ps.proto) over gRPC: `edl ps` is this function run as its own process. Every call must
 * carry the job token (UNAUTHENTICATED otherwise); ids of other shards are refused.
 */
export async function startParameterServer(options: ParameterServerOptions): Promise<ParameterServer> {
  const authorized = jobTokenCheck(options.token);
  const shard = new EmbeddingShard(options.shardIndex, options.numShards, options.tables ?? [], options.job);
  if (options.restoreFrom !== undefined)
    await restoreShardPart(shard, options.restoreFrom.dir, options.restoreFrom.version);
  const maxBytes = checkInteger(
    options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    'maxMessageBytes',
    1024,
  );
  const server = createGrpcServer(maxBytes);
  const unary = tokenCheckedUnary(authorized, toStatus);
  // Checkpoint calls wait on an object store: the token is checked, then the promise answers.
  const asyncUnary =
    <Req, Res>(handler: (request: Req) => Promise<Res>) =>
    (call: ServerUnaryCall<Req, Promise<Res>>, callback: sendUnaryData<Res>) =>
      unary(handler)(call, (error, answer) => {
        if (answer === undefined || answer === null) callback(error);
        else
          answer.then(
            (response) => callback(null, response),
            (failure: unknown) => callback(toStatus(failure)),
          );
      });

  const implementation = {
    pullEmbeddings: unary((r: PullEmbeddingsRequest): PullEmbeddingsResponse => {
      const ids = bytesToIds(r.ids, `the ids pulled from embedding table '${r.table}'`);
      const rows = shard.pull(r.table, ids, r.create);
      return {
        $typeName: 'edl.v1.PullEmbeddingsResponse',
        dim: shard.table(r.table).dim,
        // The rows are fresh: the encoder copies them into the message as it is sent.
        rows: floatsToBytes(rows),
      };
    }),
    pushEmbeddingGradients: unary((r: PushEmbeddingGradientsRequest): PushEmbeddingGradientsResponse => {
      const ids = bytesToIds(r.ids, `the ids pushed to embedding table '${r.table}'`);
      const gradients = bytesToFloats(r.gradients, `the gradients pushed to embedding table '${r.table}'`);
      const { pushes, rows } = shard.push(
        r.table,
        ids,
        gradients,
        toSafeNumber(r.modelVersion, 'modelVersion'),
        r.stepPushes === 0 ? undefined : { workerId: r.workerId, pushes: r.stepPushes },
      );
      return {
        $typeName: 'edl.v1.PushEmbeddingGradientsResponse',
        pushes: toWireInt(pushes, 'pushes'),
        rows: toWireInt(rows, 'rows'),
      };
    }),
    declareEmbeddingTables: unary((r: DeclareEmbeddingTablesRequest): DeclareEmbeddingTablesResponse => {
      const created = shard.declare(
        r.tables.map((t) => ({
          name: t.name,
          dim: t.dim,
          ...(t.initializer === undefined ? {} : { initializer: initializerOf(t.initializer, t.name) }),
        })),
      );
      for (const table of created) options.onDeclared?.(table, r.workerId);
      return { $typeName: 'edl.v1.DeclareEmbeddingTablesResponse', created };
    }),
    saveShard: asyncUnary(async (r: SaveShardRequest): Promise<SaveShardResponse> => {
      const { marker, rows } = await saveShardPart(shard, r.dir, toSafeNumber(r.version, 'version'));
      return { $typeName: 'edl.v1.SaveShardResponse', marker, rows: toWireInt(rows, 'rows') };
    }),
    restoreShard: asyncUnary(async (r: RestoreShardRequest): Promise<RestoreShardResponse> => {
      const denseVersion =
        r.modelVersion === undefined ? undefined : toSafeNumber(r.modelVersion, 'modelVersion');
      if (r.reset) resetShard(shard, denseVersion);
      const rows = r.reset
        ? 0
        : await restoreShardPart(shard, r.dir, toSafeNumber(r.version, 'version'), denseVersion);
      return { $typeName: 'edl.v1.RestoreShardResponse', rows: toWireInt(rows, 'rows') };
    }),
    declareDenseVariables: unary((r: DeclareDenseVariablesRequest): DeclareDenseVariablesResponse => {
      const accepted = shard.denseShard().declare(r.variables.map((t) => fromTensorMessage(t)));
      if (accepted) options.onDeclared?.(`dense variables (${r.variables.length})`, r.workerId);
      return { $typeName: 'edl.v1.DeclareDenseVariablesResponse', accepted };
    }),
    pushDenseGradients: unary((r: PushDenseGradientsRequest): PushDenseGradientsResponse => {
      const modelVersion = toSafeNumber(r.modelVersion, 'modelVersion');
      const version = shard.denseShard().push(
        r.gradients.map((t) => fromTensorMessage(t)),
        {
          version: toSafeNumber(r.updateVersion, 'updateVersion'),
          gradients: toSafeNumber(r.updateGradients, 'updateGradients'),
          lrDivisor: toSafeNumber(r.updateLrDivisor, 'updateLrDivisor'),
        },
      );
      if (r.stepPushes > 0) shard.countStepPush(r.workerId, modelVersion, r.stepPushes);
      return { $typeName: 'edl.v1.PushDenseGradientsResponse', version: toWireInt(version, 'version') };
    }),
    pullDenseVariables: asyncUnary(
      async (r: PullDenseVariablesRequest): Promise<PullDenseVariablesResponse> => {
        const pulled = await shard
          .denseShard()
          .pull(toSafeNumber(r.minVersion, 'minVersion'), Math.min(r.waitMs, MAX_DENSE_WAIT_MS));
        return {
          $typeName: 'edl.v1.PullDenseVariablesResponse',
          version: toWireInt(pulled.version, 'version'),
          // Fresh copies: views go into the message.
          variables: pulled.variables.map((v) => toTensorMessage(v, { copy: false })),
        };
      },
    ),
    describeShard: unary((r: DescribeShardRequest): DescribeShardResponse => {
      const last = r.workerId === '' ? undefined : shard.lastPush(r.workerId);
      return {
        $typeName: 'edl.v1.DescribeShardResponse',
        ...(last === undefined
          ? {}
          : {
              lastPush: {
                $typeName: 'edl.v1.WorkerLastPush',
                modelVersion: toWireInt(last.modelVersion, 'modelVersion'),
                due: last.due,
                applied: last.applied,
              },
            }),
        shardIndex: shard.shardIndex,
        numShards: shard.numShards,
        tables: shard.describe().map((t) => ({
          $typeName: 'edl.v1.EmbeddingTableInfo',
          name: t.name,
          dim: t.dim,
          rows: toWireInt(t.rows, 'rows'),
          bytes: toWireInt(t.bytes, 'bytes'),
          optimizer: t.optimizer,
          pushes: toWireInt(t.pushes, 'pushes'),
          maxModelVersion: toWireInt(t.maxModelVersion, 'maxModelVersion'),
        })),
      };
    }),
  };
  server.addService(
    parameterServerServiceDefinition,
    implementation as unknown as UntypedServiceImplementation,
  );

  const { address, port } = await bindInsecure(server, options.host ?? '127.0.0.1', options.port ?? 0);
  let stopped: Promise<void> | undefined;
  return {
    address,
    port,
    shard,
    shutdown(graceMs = 5_000) {
      stopped ??= shutdownGracefully(server, graceMs);
      return stopped;
    },
  };
}
