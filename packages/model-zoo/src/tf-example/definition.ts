import { type ExampleSpec, encodeExample, parseExample } from '@edl/proto/example';
import { batchRecords, type DatasetFn, type ModelDefinition, tf, tfl } from '@edl/worker';

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
 * ElasticDL writes them): `records.map(parseExample(spec))`, as a TensorFlow user would write
 * `dataset.map(parse_fn)`, then minibatches of `x` and one-hot labels.
 */
export const tfExampleDatasetFn: DatasetFn<Uint8Array> = async function* (records, mode, metadata) {
  const parsed = records.map(parseExample(TF_EXAMPLE_SPEC));
  for await (const batch of batchRecords(parsed, metadata.minibatchSize)) {
    const n = batch.length;
    const x = new Float32Array(n * TF_EXAMPLE_FEATURES);
    const labels = new Int32Array(n);
    batch.forEach((example, i) => {
      x.set(example.x, i * TF_EXAMPLE_FEATURES);
      labels[i] = example.label[0] as number;
    });
    const features = tf.tensor2d(x, [n, TF_EXAMPLE_FEATURES]);
    if (mode === 'prediction') {
      yield { features };
    } else {
      yield {
        features,
        labels: tf.tidy(() =>
          tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), TF_EXAMPLE_CLASSES), 'float32'),
        ),
      };
    }
  }
};

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
