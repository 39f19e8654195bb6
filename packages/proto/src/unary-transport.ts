import { type Client, Metadata, type MethodDefinition, type ServiceError } from '@grpc/grpc-js';
import { MasterRpcError } from './errors.js';
import { JOB_TOKEN_METADATA_KEY, masterServiceDefinition } from './grpc-service.js';

type Methods = typeof masterServiceDefinition;
/** The request message of a master method. */
export type RequestOf<K extends keyof Methods> = Parameters<Methods[K]['requestSerialize']>[0];
/** The response message of a master method. */
export type ResponseOf<K extends keyof Methods> = ReturnType<Methods[K]['responseDeserialize']>;

/**
 * One unary gRPC call per request: every call carries the job token and its own deadline, and a
 * failure rejects with a {@link MasterRpcError} named after the method.
 */
export class UnaryTransport {
  readonly #client: Client;
  readonly #token: string;
  readonly #deadlineMs: number;

  constructor(client: Client, token: string, deadlineMs: number) {
    this.#client = client;
    this.#token = token;
    this.#deadlineMs = deadlineMs;
  }

  call<K extends keyof Methods>(method: K, request: RequestOf<K>): Promise<ResponseOf<K>> {
    return unaryCall(
      this.#client,
      masterServiceDefinition[method] as unknown as MethodDefinition<RequestOf<K>, ResponseOf<K>>,
      request,
      this.#token,
      this.#deadlineMs,
      (code, details, cause) => new MasterRpcError(String(method), code, details, cause && { cause }),
    );
  }
}

/**
 * One unary call with the job token and a deadline; a failure (or an empty reply, INTERNAL)
 * rejects with what `failure` makes of the status, its details and the gRPC error.
 */
export function unaryCall<Req, Res>(
  client: Client,
  definition: MethodDefinition<Req, Res>,
  request: Req,
  token: string,
  deadlineMs: number,
  failure: (code: number, details: string, cause?: ServiceError) => Error,
): Promise<Res> {
  const metadata = new Metadata();
  metadata.set(JOB_TOKEN_METADATA_KEY, token);
  return new Promise<Res>((resolve, reject) => {
    client.makeUnaryRequest(
      definition.path,
      definition.requestSerialize,
      definition.responseDeserialize,
      request,
      metadata,
      { deadline: Date.now() + deadlineMs },
      (error: ServiceError | null, response?: Res) => {
        if (error) reject(failure(error.code, error.details || error.message, error));
        else if (response === undefined) reject(failure(13, 'empty response'));
        else resolve(response);
      },
    );
  });
}
