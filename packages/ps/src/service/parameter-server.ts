import { checkInteger } from '@edl/common';
import {
  bytesToFloats,
  bytesToIds,
  DEFAULT_MAX_MESSAGE_BYTES,
  type DescribeShardResponse,
  floatsToBytes,
  jobTokenCheck,
  type PullEmbeddingsRequest,
  type PullEmbeddingsResponse,
  type PushEmbeddingGradientsRequest,
  type PushEmbeddingGradientsResponse,
  parameterServerServiceDefinition,
  toSafeNumber,
  toWireInt,
  WRONG_TOKEN_DETAILS,
} from '@edl/proto';
import {
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
  type UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { ParameterStoreError } from '../errors.js';
import { EmbeddingShard, type EmbeddingTableSpec } from './embedding-shard.js';

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
  /** The embedding tables this shard serves its rows of. */
  readonly tables: readonly EmbeddingTableSpec[];
  /** Largest message received or sent, in bytes (default 64 MiB). */
  readonly maxMessageBytes?: number;
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

function grpcError(code: status, details: string): Partial<ServiceError> {
  return { code, details, message: details };
}

/** Arguments are INVALID_ARGUMENT, an unknown table NOT_FOUND, another shard's id FAILED_PRECONDITION. */
function toStatus(error: unknown): Partial<ServiceError> {
  if (error instanceof RangeError || error instanceof TypeError)
    return grpcError(status.INVALID_ARGUMENT, error.message);
  if (error instanceof ParameterStoreError)
    return grpcError(
      error.code === 'UNKNOWN_TABLE' ? status.NOT_FOUND : status.FAILED_PRECONDITION,
      `${error.code}: ${error.message}`,
    );
  return grpcError(status.INTERNAL, error instanceof Error ? error.message : String(error));
}

/**
 * Serves one parameter-server shard's embedding rows (the ParameterServerService of
 * edl/v1/ps.proto) over gRPC: `edl ps` is this function run as its own process. Every call must
 * carry the job token (UNAUTHENTICATED otherwise); ids of other shards are refused.
 */
export async function startParameterServer(options: ParameterServerOptions): Promise<ParameterServer> {
  const authorized = jobTokenCheck(options.token);
  const shard = new EmbeddingShard(options.shardIndex, options.numShards, options.tables);
  const host = options.host ?? '127.0.0.1';
  // An IPv6 literal needs brackets in a host:port string.
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const maxBytes = checkInteger(
    options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES,
    'maxMessageBytes',
    1024,
  );
  const server = new Server({
    'grpc.max_receive_message_length': maxBytes,
    'grpc.max_send_message_length': maxBytes,
    // Every worker calls every shard once per table per step, pulls and pushes overlapping.
    'grpc.max_concurrent_streams': 4096,
    'grpc.enable_channelz': 0,
  });

  /** Wraps a synchronous handler with the token check and error mapping. */
  function unary<Req, Res>(handler: (request: Req) => Res) {
    return (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
      if (!authorized(call.metadata)) {
        callback(grpcError(status.UNAUTHENTICATED, WRONG_TOKEN_DETAILS));
        return;
      }
      let response: Res;
      try {
        response = handler(call.request);
      } catch (error) {
        callback(toStatus(error));
        return;
      }
      callback(null, response);
    };
  }

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
      );
      return {
        $typeName: 'edl.v1.PushEmbeddingGradientsResponse',
        pushes: toWireInt(pushes, 'pushes'),
        rows: toWireInt(rows, 'rows'),
      };
    }),
    describeShard: unary(
      (): DescribeShardResponse => ({
        $typeName: 'edl.v1.DescribeShardResponse',
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
      }),
    ),
  };
  server.addService(
    parameterServerServiceDefinition,
    implementation as unknown as UntypedServiceImplementation,
  );

  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(
      `${hostPart}:${options.port ?? 0}`,
      ServerCredentials.createInsecure(),
      (error, bound) => (error ? reject(error) : resolve(bound)),
    );
  });
  let stopped: Promise<void> | undefined;
  return {
    address: `${hostPart}:${port}`,
    port,
    shard,
    shutdown(graceMs = 5_000) {
      stopped ??= new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          server.forceShutdown();
          resolve();
        }, graceMs);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      return stopped;
    },
  };
}
