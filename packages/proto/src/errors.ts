import { status as GrpcStatus } from '@grpc/grpc-js';

/** Base of every non-argument error of @edl/proto: `code` is stable and safe to switch on. */
export class EdlProtoError extends Error {
  override readonly name: string = 'EdlProtoError';
  constructor(
    readonly code: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** Status names by number, e.g. 16 -> 'UNAUTHENTICATED'. */
const statusNames = new Map<number, string>(
  Object.entries(GrpcStatus)
    .filter((entry): entry is [string, number] => typeof entry[1] === 'number')
    .map(([name, value]) => [value, name]),
);

/** Statuses after which the same call may succeed when retried (the master restarting, a lost reply). */
const retryableStatuses = new Set<number>([
  GrpcStatus.UNAVAILABLE,
  GrpcStatus.DEADLINE_EXCEEDED,
  GrpcStatus.RESOURCE_EXHAUSTED,
]);

/**
 * A failed call to the master. `code` is the gRPC status name (`UNAUTHENTICATED`, `UNAVAILABLE`,
 * `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, ...), `grpcStatus` its number, `method` the RPC.
 */
export class MasterRpcError extends EdlProtoError {
  override readonly name = 'MasterRpcError';
  /** True when retrying the same call may succeed. */
  readonly retryable: boolean;
  constructor(
    readonly method: string,
    readonly grpcStatus: number,
    readonly details: string,
    options?: { cause?: unknown },
  ) {
    const code = statusNames.get(grpcStatus) ?? `STATUS_${grpcStatus}`;
    super(code, `${method} failed with ${code}: ${details}`, options);
    this.retryable = retryableStatuses.has(grpcStatus);
  }
}

/** The name of a gRPC status number, for messages and logs. */
export function grpcStatusName(code: number): string {
  return statusNames.get(code) ?? `STATUS_${code}`;
}
