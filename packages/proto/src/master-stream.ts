import {
  type Client,
  type ClientDuplexStream,
  status as grpcStatus,
  Metadata,
  type ServiceError,
} from '@grpc/grpc-js';
import { JOB_TOKEN_METADATA_KEY, masterServiceDefinition } from './grpc-service.js';

/**
 * Opens one of the master's bidi streams with the job token (checked once, when it opens).
 * `onData` hears each reply; `broken` hears an error status, or UNAVAILABLE when the master ends
 * the stream (`name` says which stream in that message).
 */
export function openMasterStream<Req, Res>(
  client: Client,
  token: string,
  method: 'taskBatchStream' | 'gradientStream',
  name: string,
  onData: (response: Res) => void,
  broken: (code: number, details: string) => void,
): ClientDuplexStream<Req, Res> {
  const metadata = new Metadata();
  metadata.set(JOB_TOKEN_METADATA_KEY, token);
  const definition = masterServiceDefinition[method];
  const stream = client.makeBidiStreamRequest(
    definition.path,
    definition.requestSerialize as (value: Req) => Buffer,
    definition.responseDeserialize as (bytes: Buffer) => Res,
    metadata,
    {},
  );
  stream.on('data', onData);
  stream.on('error', (error: ServiceError) => broken(error.code, error.details || error.message));
  stream.on('end', () => broken(grpcStatus.UNAVAILABLE, `${name} ended`));
  return stream;
}
