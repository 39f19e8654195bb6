import {
  type Metadata,
  Server,
  ServerCredentials,
  type ServerUnaryCall,
  type ServiceError,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { WRONG_TOKEN_DETAILS } from './job-token.js';

/*
 * What every elasticdl-ts gRPC server does the same way, the master's and each parameter-server
 * shard's: the server's options, the token check and error mapping around synchronous handlers,
 * binding to host:port, and a shutdown with a grace period.
 */

/** A gRPC status with its details, as a handler's callback takes it. */
export function grpcError(code: status, details: string): Partial<ServiceError> {
  return { code, details, message: details };
}

/** An insecure @grpc/grpc-js server with the message limit both ways and many streams per connection. */
export function createGrpcServer(maxMessageBytes: number): Server {
  return new Server({
    'grpc.max_receive_message_length': maxMessageBytes,
    'grpc.max_send_message_length': maxMessageBytes,
    // Many small concurrent calls per worker connection: do not queue them behind HTTP/2 limits.
    'grpc.max_concurrent_streams': 4096,
    // Channelz bookkeeping (per-call counters and traces) costs on every call and nothing reads it.
    'grpc.enable_channelz': 0,
  });
}

/**
 * A wrapper of synchronous unary handlers: a call without the job token is UNAUTHENTICATED, an
 * exception the status `toStatus` maps it to.
 */
export function tokenCheckedUnary(
  authorized: (metadata: Metadata) => boolean,
  toStatus: (error: unknown) => Partial<ServiceError>,
) {
  return <Req, Res>(handler: (request: Req) => Res) =>
    (call: ServerUnaryCall<Req, Res>, callback: sendUnaryData<Res>) => {
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

/** Binds `server` to host:port (port 0: any free one) without TLS; resolves to the address bound. */
export async function bindInsecure(
  server: Server,
  host: string,
  port: number,
): Promise<{ address: string; port: number }> {
  // An IPv6 literal needs brackets in a host:port string.
  const hostPart = host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
  const bound = await new Promise<number>((resolve, reject) => {
    server.bindAsync(`${hostPart}:${port}`, ServerCredentials.createInsecure(), (error, p) =>
      error ? reject(error) : resolve(p),
    );
  });
  return { address: `${hostPart}:${bound}`, port: bound };
}

/**
 * Stops accepting calls, lets calls in flight finish for up to `graceMs`, then cuts the rest.
 * `afterStop` runs once shutdown has begun (the master ends its open streams there, which would
 * otherwise hold the shutdown for the whole grace).
 */
export function shutdownGracefully(server: Server, graceMs: number, afterStop?: () => void): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
    afterStop?.();
  });
}
