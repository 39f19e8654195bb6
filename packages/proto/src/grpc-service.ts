import { type DescMessage, fromBinary, type MessageShape, toBinary } from '@bufbuild/protobuf';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { MethodDefinition, ServiceDefinition } from '@grpc/grpc-js';
import { MasterService } from './generated/edl/v1/master_pb.js';
import {
  encodeGetModelResponse,
  encodeReportGradientRequest,
  encodeReportGradientResponse,
  encodeReportVariablesRequest,
} from './model-message-codec.js';
import {
  decodeTaskBatchStreamRequest,
  decodeTaskBatchStreamResponse,
  decodeTaskStreamRequest,
  decodeTaskStreamResponse,
  encodeTaskBatchStreamRequest,
  encodeTaskBatchStreamResponse,
  encodeTaskStreamRequest,
  encodeTaskStreamResponse,
} from './task-stream-codec.js';

/** Metadata key that carries the job token on every call. */
export const JOB_TOKEN_METADATA_KEY = 'x-edl-job-token';

/** Default message size limit (64 MiB): a whole model or gradient set travels in one message. */
export const DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024;

type MasterMethods = typeof MasterService.method;
type MethodName = keyof MasterMethods;
type InputOf<K extends MethodName> = MessageShape<MasterMethods[K]['input']>;
type OutputOf<K extends MethodName> = MessageShape<MasterMethods[K]['output']>;

/** The gRPC method definition of each MasterService RPC, keyed by its lowerCamel name. */
export type MasterServiceDefinition = { [K in MethodName]: MethodDefinition<InputOf<K>, OutputOf<K>> };

function serializer<D extends DescMessage>(schema: D): (message: MessageShape<D>) => Buffer {
  return (message) => {
    const bytes = toBinary(schema, message);
    return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  };
}

function deserializer<D extends DescMessage>(schema: D): (bytes: Buffer) => MessageShape<D> {
  return (bytes) => fromBinary(schema, bytes);
}

/**
 * A serializer that also takes bytes encoded already. The master encodes each GradientStream reply
 * as it answers, from views of its variables: grpc-js may write a stream's reply later, after the
 * next gradient changed them, so a reply of message objects needed a copy of the model first.
 */
function encodedOr<M>(encode: (message: M) => Buffer): (value: M | Uint8Array) => Buffer {
  return (value) =>
    value instanceof Uint8Array
      ? Buffer.from(value.buffer, value.byteOffset, value.byteLength)
      : encode(value);
}

/** The serializers a hand-written codec replaces in a method's definition. */
export type MethodCodec = Partial<
  Pick<
    MethodDefinition<unknown, unknown>,
    'requestSerialize' | 'requestDeserialize' | 'responseSerialize' | 'responseDeserialize'
  >
>;

/**
 * The @grpc/grpc-js definition of a generated service: serializers from its protobuf-es schemas,
 * replaced by `codecs[method]` where a hot message has a hand-written codec (same wire format).
 */
export function buildServiceDefinition<
  S extends GenService<
    Record<string, { methodKind: 'unary' | 'bidi_streaming'; input: DescMessage; output: DescMessage }>
  >,
>(service: S, codecs: Readonly<Record<string, MethodCodec>> = {}): ServiceDefinition {
  const definition: Record<string, MethodDefinition<unknown, unknown>> = {};
  for (const method of service.methods) {
    const bidi = method.methodKind === 'bidi_streaming';
    if (!bidi && method.methodKind !== 'unary') {
      throw new Error(`${service.typeName}.${method.name} is neither unary nor bidi-streaming`);
    }
    definition[method.localName] = {
      path: `/${service.typeName}/${method.name}`,
      requestStream: bidi,
      responseStream: bidi,
      requestSerialize: serializer(method.input) as (value: unknown) => Buffer,
      requestDeserialize: deserializer(method.input),
      responseSerialize: serializer(method.output) as (value: unknown) => Buffer,
      responseDeserialize: deserializer(method.output),
      originalName: method.localName,
      ...codecs[method.localName],
    };
  }
  return definition;
}

type Codec = Required<MethodCodec>;
// The dispatch fast path: the hand-written codec (same wire format, checked against the generated one).
const dispatchCodecs: Record<string, MethodCodec> = {
  taskStream: {
    requestSerialize: encodeTaskStreamRequest as Codec['requestSerialize'],
    requestDeserialize: decodeTaskStreamRequest,
    responseSerialize: encodeTaskStreamResponse as Codec['responseSerialize'],
    responseDeserialize: decodeTaskStreamResponse,
  },
  taskBatchStream: {
    requestSerialize: encodeTaskBatchStreamRequest as Codec['requestSerialize'],
    requestDeserialize: decodeTaskBatchStreamRequest,
    responseSerialize: encodeTaskBatchStreamResponse as Codec['responseSerialize'],
    responseDeserialize: decodeTaskBatchStreamResponse,
  },
};
// The messages that carry a model or a gradient set, one each way per training step: exact-size
// encoders (decoding keeps the generated code, which copies no tensor bytes).
const modelCodecs: Record<string, MethodCodec> = {
  reportGradient: {
    requestSerialize: encodeReportGradientRequest as Codec['requestSerialize'],
    responseSerialize: encodeReportGradientResponse as Codec['responseSerialize'],
  },
  gradientStream: {
    requestSerialize: encodeReportGradientRequest as Codec['requestSerialize'],
    responseSerialize: encodedOr(encodeReportGradientResponse) as Codec['responseSerialize'],
  },
  getModel: { responseSerialize: encodeGetModelResponse as Codec['responseSerialize'] },
  reportVariables: { requestSerialize: encodeReportVariablesRequest as Codec['requestSerialize'] },
};

/**
 * The MasterService for @grpc/grpc-js (`server.addService`, `client.makeUnaryRequest`), with
 * serializers from the generated protobuf-es schemas.
 */
export const masterServiceDefinition = buildServiceDefinition(MasterService, {
  ...dispatchCodecs,
  ...modelCodecs,
}) as ServiceDefinition & MasterServiceDefinition;
