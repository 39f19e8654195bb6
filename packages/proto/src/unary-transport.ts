import { type Client, Metadata, type ServiceError } from '@grpc/grpc-js';
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
    const definition = masterServiceDefinition[method] as Methods[K];
    const metadata = new Metadata();
    metadata.set(JOB_TOKEN_METADATA_KEY, this.#token);
    return new Promise<ResponseOf<K>>((resolve, reject) => {
      this.#client.makeUnaryRequest(
        definition.path,
        definition.requestSerialize as (value: RequestOf<K>) => Buffer,
        definition.responseDeserialize as (bytes: Buffer) => ResponseOf<K>,
        request,
        metadata,
        { deadline: Date.now() + this.#deadlineMs },
        (error: ServiceError | null, response?: ResponseOf<K>) => {
          if (error)
            reject(
              new MasterRpcError(String(method), error.code, error.details || error.message, {
                cause: error,
              }),
            );
          else if (response === undefined) reject(new MasterRpcError(String(method), 13, 'empty response'));
          else resolve(response);
        },
      );
    });
  }
}
