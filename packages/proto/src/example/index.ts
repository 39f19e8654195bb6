/**
 * `tf.train.Example` for elasticdl-ts: the generated types of TensorFlow's example.proto and
 * feature.proto, the fast batch parser (`parseExamples`), the dataset map transform
 * (`parseExample`), proto3 JSON printing and an encoder. Importable alone as `@edl/proto/example`
 * (no gRPC is loaded).
 *
 * @packageDocumentation
 */
export * from '../generated/tensorflow/core/example/example_pb.js';
export * from '../generated/tensorflow/core/example/feature_pb.js';
export { decodeExample, type ExampleFeatureInput, encodeExample, exampleToJson } from './example-json.js';
export type {
  DenseFeature,
  ExampleSpec,
  FeatureDefault,
  FeatureSpec,
  FeatureType,
  FeatureValues,
  ParsedExample,
  ParsedExamples,
  RaggedFeature,
} from './example-spec.js';
export { type ExampleBatch, ExampleParseError, parseExample, parseExamples } from './parse-examples.js';
