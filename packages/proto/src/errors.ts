import { EdlError } from '@edl/common';
import { status as GrpcStatus } from '@grpc/grpc-js';

/** The name of a gRPC status, e.g. `'UNAVAILABLE'`. */
export type GrpcStatusName = keyof typeof GrpcStatus;

/**
 * Stable codes of {@link EdlProtoError}: the gRPC status name of a failed call to the master
 * (`STATUS_<n>` for a number gRPC does not name), `BAD_EXAMPLE` for an Example that does not
 * parse as its spec asks, or `BAD_RESPONSE` for a master's reply that does not make sense.
 */
export type ProtoErrorCode = GrpcStatusName | `STATUS_${number}` | 'BAD_EXAMPLE' | 'BAD_RESPONSE';

/** Base of every non-argument error of @edl/proto: `code` is stable and safe to switch on. */
export class EdlProtoError extends EdlError<ProtoErrorCode> {
  override readonly name: string = 'EdlProtoError';
}

/** Status names by number, e.g. 16 -> 'UNAUTHENTICATED'. */
const statusNames = new Map<number, GrpcStatusName>(
  Object.entries(GrpcStatus)
    .filter((entry): entry is [GrpcStatusName, number] => typeof entry[1] === 'number')
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
export function grpcStatusName(code: number): GrpcStatusName | `STATUS_${number}` {
  return statusNames.get(code) ?? `STATUS_${code}`;
}
