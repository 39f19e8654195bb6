import type { MessageShape } from '@bufbuild/protobuf';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import {
  encodePullEmbeddingsRequest,
  encodePullEmbeddingsResponse,
  encodePushEmbeddingGradientsRequest,
} from './embedding-codec.js';
import { ParameterServerService } from './generated/edl/v1/ps_pb.js';
import { buildServiceDefinition, type MethodCodec } from './grpc-service.js';

type ShardMethods = typeof ParameterServerService.method;
type ShardMethodName = keyof ShardMethods;

/** The gRPC method definition of each ParameterServerService RPC, keyed by its lowerCamel name. */
export type ParameterServerServiceDefinition = {
  [K in ShardMethodName]: MethodDefinition<
    MessageShape<ShardMethods[K]['input']>,
    MessageShape<ShardMethods[K]['output']>
  >;
};

type Serialize = NonNullable<MethodCodec['requestSerialize']>;

/**
 * The ParameterServerService (edl/v1/ps.proto) of a parameter-server shard for @grpc/grpc-js:
 * the pull and push messages, one pair per table per step, go through the exact-size encoders of
 * embedding-codec.ts; DescribeShard through the generated code.
 */
export const parameterServerServiceDefinition = buildServiceDefinition(ParameterServerService, {
  pullEmbeddings: {
    requestSerialize: encodePullEmbeddingsRequest as Serialize,
    responseSerialize: encodePullEmbeddingsResponse as Serialize,
  },
  pushEmbeddingGradients: { requestSerialize: encodePushEmbeddingGradientsRequest as Serialize },
}) as ServiceDefinition & ParameterServerServiceDefinition;
