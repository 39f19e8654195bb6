import { type ExampleSpec, encodeExample, parseExamples } from '@edl/proto/example';
import { type DatasetFn, type Minibatch, type ModelDefinition, minibatches, tf, tfl } from '@edl/worker';

/** Features per Example (`x`, float32) and classes (`label`, int64 in [0, TF_EXAMPLE_CLASSES)). */
export const TF_EXAMPLE_FEATURES = 16;
export const TF_EXAMPLE_CLASSES = 4;

/**
 * The `tf.train.Example` layout the model reads, in `tf.io.parse_example` terms: `x` a
 * FixedLenFeature([16], float32), `label` a FixedLenFeature([], int64), `weight` an optional
 * FixedLenFeature([], float32) with default 1.
 */
export const TF_EXAMPLE_SPEC = {
  x: { type: 'float32', shape: [TF_EXAMPLE_FEATURES] },
  label: { type: 'int64', shape: [] },
  weight: { type: 'float32', shape: [], default: 1 },
} as const satisfies ExampleSpec;

/** One Example of the layout above, serialized (for data generators and tests). */
export function encodeTfExample(x: ArrayLike<number>, label: number, weight?: number): Uint8Array {
  return encodeExample({
    x: { type: 'float32', values: x },
    label: { type: 'int64', values: [label] },
    ...(weight === undefined ? {} : { weight: { type: 'float32', values: [weight] } }),
  });
}

/** A classifier with one hidden layer; it outputs logits (argmax is the class). */
export function buildTfExampleModel(): tfl.LayersModel {
  return tfl.sequential({
    name: 'tf_example',
    layers: [
      tfl.layers.dense({
        name: 'hidden',
        inputShape: [TF_EXAMPLE_FEATURES],
        units: 16,
        activation: 'relu',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 21 }),
      }),
      tfl.layers.dense({
        name: 'logits',
        units: TF_EXAMPLE_CLASSES,
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 22 }),
      }),
    ],
  });
}

/**
 * datasetFn over serialized Examples (from TFRecord files, or RecordIO files of Examples as
 * ElasticDL writes them), on the batch path: each minibatch of records is parsed in one
 * `parseExamples` call (as `tf.io.parse_example` parses a batch), then `x` and one-hot labels.
 */
export const tfExampleDatasetFn: DatasetFn<Uint8Array> = (records, mode, metadata) =>
  minibatches(records, metadata.minibatchSize).map((batch): Minibatch => {
    const n = batch.length;
    const { x, label } = parseExamples(batch, TF_EXAMPLE_SPEC);
    const features = tf.tensor2d(x.values, [n, TF_EXAMPLE_FEATURES]);
    if (mode === 'prediction') return { features };
    return {
      features,
      labels: tf.tidy(() =>
        tf.cast(
          tf.oneHot(tf.tensor1d(Int32Array.from(label.values), 'int32'), TF_EXAMPLE_CLASSES),
          'float32',
        ),
      ),
    };
  });

/** The model definition: softmax cross-entropy on the logits, Adam, accuracy. */
export function tfExampleDefinition(learningRate = 0.02): ModelDefinition<Uint8Array> {
  return {
    model: buildTfExampleModel,
    loss: (labels, outputs) => tf.losses.softmaxCrossEntropy(labels, outputs) as tf.Scalar,
    optimizer: { name: 'adam', params: { learningRate } },
    datasetFn: tfExampleDatasetFn,
    evalMetrics: { accuracy: 'accuracy' },
  };
}
