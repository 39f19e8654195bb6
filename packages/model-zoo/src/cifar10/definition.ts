import type { IterDataset } from '@edl/data';
import { type DatasetFn, type Minibatch, type ModelDefinition, minibatches, tf, tfl } from '@edl/worker';
import { CIFAR10_CHANNELS, CIFAR10_CLASSES, CIFAR10_SIDE } from './record-format.js';

/** Shape of the CIFAR-10 CNN. */
export interface Cifar10ModelOptions {
  /** Filters of the convolutions of each block (default [32, 64, 128], as ElasticDL's model). */
  readonly filters?: readonly number[];
  /** Convolutions per block (default 2). */
  readonly convsPerBlock?: number;
  /** Dropout after each block (default 0.2, 0.3, 0.4, ...). */
  readonly dropout?: number;
  /** Learning rate of the SGD-with-momentum optimizer (default 0.05). */
  readonly learningRate?: number;
  /** Input preprocessing (augmentation on by default). */
  readonly input?: Cifar10InputOptions;
}

/** The Keras-style functional CNN of ElasticDL's `cifar10_functional_api`, with named layers. */
export function buildCifar10Model(options: Cifar10ModelOptions = {}): tfl.LayersModel {
  const filters = options.filters ?? [32, 64, 128];
  const convs = options.convsPerBlock ?? 2;
  const input = tfl.input({ shape: [CIFAR10_SIDE, CIFAR10_SIDE, CIFAR10_CHANNELS], name: 'image' });
  let x: tfl.SymbolicTensor = input;
  let seed = 1;
  filters.forEach((count, block) => {
    for (let i = 0; i < convs; i++) {
      const name = `block${block + 1}_conv${i + 1}`;
      x = tfl.layers
        .conv2d({
          name,
          filters: count,
          kernelSize: 3,
          padding: 'same',
          useBias: false,
          kernelInitializer: tfl.initializers.heNormal({ seed: seed++ }),
        })
        .apply(x) as tfl.SymbolicTensor;
      x = tfl.layers.batchNormalization({ name: `${name}_bn` }).apply(x) as tfl.SymbolicTensor;
      x = tfl.layers.activation({ name: `${name}_relu`, activation: 'relu' }).apply(x) as tfl.SymbolicTensor;
    }
    x = tfl.layers
      .maxPooling2d({ name: `block${block + 1}_pool`, poolSize: 2 })
      .apply(x) as tfl.SymbolicTensor;
    const rate = options.dropout ?? 0.2 + 0.1 * block;
    if (rate > 0) {
      x = tfl.layers
        .dropout({ name: `block${block + 1}_dropout`, rate, seed: seed++ })
        .apply(x) as tfl.SymbolicTensor;
    }
  });
  x = tfl.layers.flatten({ name: 'flatten' }).apply(x) as tfl.SymbolicTensor;
  const output = tfl.layers
    .dense({
      name: 'logits',
      units: CIFAR10_CLASSES,
      activation: 'softmax',
      kernelInitializer: tfl.initializers.glorotUniform({ seed: seed++ }),
    })
    .apply(x) as tfl.SymbolicTensor;
  return tfl.model({ inputs: input, outputs: output, name: 'cifar10' });
}

/** A minibatch as the preprocessing module returns it (see workers/cifar10-preprocess.mjs). */
export interface PreparedCifar10Batch {
  /** Normalised (and, in training, augmented) images, batch x 32 x 32 x 3. */
  readonly pixels: Float32Array;
  readonly labels: Int32Array;
}

/**
 * The preprocessing module, plain JavaScript outside `src` so that worker threads can import it
 * from the sources and from `dist` alike (both are two levels below the package root).
 */
export const CIFAR10_PREPROCESS_MODULE = new URL('../../workers/cifar10-preprocess.mjs', import.meta.url);

/** Options of {@link cifar10DatasetFnWith}. */
export interface Cifar10InputOptions {
  /** Random crop (4-pixel padding) and horizontal flip of training images (default true). */
  readonly augment?: boolean;
  /** Seed of the augmentation: record n of a stream gets the same crop and flip for the same seed (default 1). */
  readonly seed?: number;
}

/** Turns a prepared minibatch into tensors: images and one-hot labels. */
function toMinibatch(batch: PreparedCifar10Batch, withLabels: boolean): Minibatch {
  const count = batch.labels.length;
  const features = tf.tensor4d(batch.pixels, [count, CIFAR10_SIDE, CIFAR10_SIDE, CIFAR10_CHANNELS]);
  if (!withLabels) return { features };
  return {
    features,
    labels: tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(batch.labels, 'int32'), CIFAR10_CLASSES), 'float32')),
  };
}

/** Reads the prepared minibatches and makes tensors; stopping early stops the threads. */
async function* toMinibatches(
  prepared: IterDataset<PreparedCifar10Batch>,
  withLabels: boolean,
): AsyncGenerator<Minibatch> {
  const iterator = prepared.iterator();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      yield toMinibatch(next.value, withLabels);
    }
  } finally {
    await iterator.return?.();
  }
}

/**
 * ElasticDL's dataset_fn for CIFAR-10 records, on the shared records dataset: batch, then parse and
 * preprocess each minibatch (label byte, pixels normalised per channel, random crop and flip in
 * training) with `mapParallel` on `metadata.inputWorkers` threads, off the main thread (0: on the
 * main thread, the serialized loop), then make tensors. Prediction minibatches carry no labels.
 */
export function cifar10DatasetFnWith(options: Cifar10InputOptions = {}): DatasetFn<Uint8Array> {
  return (records, mode, metadata) => {
    const prepared = minibatches(records, metadata.minibatchSize).mapParallel<PreparedCifar10Batch>({
      module: CIFAR10_PREPROCESS_MODULE,
      export: 'preprocessCifar10Batch',
      args: {
        augment: mode === 'training' && (options.augment ?? true),
        seed: options.seed ?? 1,
        minibatchSize: metadata.minibatchSize,
      },
      workers: metadata.inputWorkers ?? 0,
    });
    return toMinibatches(prepared, mode !== 'prediction');
  };
}

/** {@link cifar10DatasetFnWith} with the default options. */
export const cifar10DatasetFn: DatasetFn<Uint8Array> = cifar10DatasetFnWith();

/** A complete CIFAR-10 model definition with the given shape. */
export function cifar10Definition(options: Cifar10ModelOptions = {}): ModelDefinition<Uint8Array> {
  return {
    model: () => buildCifar10Model(options),
    // The model ends in softmax, so this is cross-entropy on probabilities (not on logits).
    loss: (labels, outputs) =>
      tf.mean(tf.neg(tf.sum(tf.mul(labels, tf.log(tf.clipByValue(outputs, 1e-7, 1))), -1))) as tf.Scalar,
    optimizer: { name: 'momentum', params: { learningRate: options.learningRate ?? 0.05, momentum: 0.9 } },
    datasetFn: cifar10DatasetFnWith(options.input),
    evalMetrics: { accuracy: 'accuracy' },
  };
}
