import { create, fromBinary, toBinary, toJsonString } from '@bufbuild/protobuf';
import { EdlProtoError } from '../errors.js';
import { type Example, ExampleSchema } from '../generated/tensorflow/core/example/example_pb.js';
import { type Feature, FeatureSchema } from '../generated/tensorflow/core/example/feature_pb.js';

/** One feature's values for {@link encodeExample}. */
export type ExampleFeatureInput =
  | { readonly type: 'float32'; readonly values: ArrayLike<number> }
  | { readonly type: 'int64'; readonly values: ArrayLike<number | bigint> }
  | { readonly type: 'bytes'; readonly values: readonly (string | Uint8Array)[] };

const encoder = new TextEncoder();

/** Decodes a serialized `tf.train.Example` with the generated decoder (`BAD_EXAMPLE` when malformed). */
export function decodeExample(bytes: Uint8Array): Example {
  try {
    return fromBinary(ExampleSchema, bytes);
  } catch (error) {
    throw new EdlProtoError('BAD_EXAMPLE', `not a tf.train.Example: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/**
 * A serialized `tf.train.Example` as one line of the canonical proto3 JSON mapping, as TensorFlow's
 * and protobuf's own tools print it: `{"features":{"feature":{"x":{"floatList":{"value":[0.5]}}}}}`
 * (int64 values as strings, bytes in base64).
 */
export function exampleToJson(bytes: Uint8Array): string {
  return toJsonString(ExampleSchema, decodeExample(bytes));
}

/** Serializes a `tf.train.Example` holding `features` (for writers of training data). */
export function encodeExample(features: Readonly<Record<string, ExampleFeatureInput>>): Uint8Array {
  const map: Record<string, Feature> = {};
  for (const [name, input] of Object.entries(features)) {
    let feature: Feature;
    switch (input.type) {
      case 'float32':
        feature = create(FeatureSchema, {
          kind: { case: 'floatList', value: { value: Array.from(input.values) } },
        });
        break;
      case 'int64':
        feature = create(FeatureSchema, {
          kind: { case: 'int64List', value: { value: Array.from(input.values, (v) => BigInt(v)) } },
        });
        break;
      case 'bytes':
        feature = create(FeatureSchema, {
          kind: {
            case: 'bytesList',
            value: { value: input.values.map((v) => (typeof v === 'string' ? encoder.encode(v) : v)) },
          },
        });
        break;
      default:
        throw new TypeError(
          `Expected a type of 'float32', 'int64' or 'bytes' for features[${JSON.stringify(name)}] but received ${JSON.stringify((input as { type?: unknown }).type)}`,
        );
    }
    map[name] = feature;
  }
  return toBinary(ExampleSchema, create(ExampleSchema, { features: { feature: map } }));
}
