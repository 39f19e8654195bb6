import { type DatasetFn, type Minibatch, type ModelDefinition, minibatches, tf, tfl } from '@edl/worker';
import { MNIST_CLASSES, MNIST_PIXEL_BYTES, MNIST_RECORD_BYTES, MNIST_SIDE } from './record-format.js';

/** Shape and optimizer of the MNIST CNN. */
export interface MnistModelOptions {
  /** Filters of the two convolutions (default [8, 16]). */
  readonly filters?: readonly [number, number];
  /** Side of the convolution kernels (default 5). */
  readonly kernelSize?: number;
  /** Units of the hidden dense layer (default 64). */
  readonly hidden?: number;
  /** Learning rate of Adam (default 0.002). */
  readonly learningRate?: number;
  /** Records per shuffle window of a training task (default 512; 0: no shuffle buffer). */
  readonly shuffleBuffer?: number;
}

/** Default shuffle window of MNIST training records. */
const MNIST_SHUFFLE_BUFFER = 512;
/** The window shuffle's seed: any fixed number, so that runs repeat. */
const MNIST_SHUFFLE_SEED = 2019;

/**
 * A small LeNet-style MNIST CNN: two 5x5 conv + ReLU + 2x2 max-pooling blocks, a dense ReLU layer and
 * a softmax over the ten digits. Layers are named and seeded, so every worker builds the same model.
 */
export function buildMnistModel(options: MnistModelOptions = {}): tfl.LayersModel {
  const [first, second] = options.filters ?? [8, 16];
  const kernelSize = options.kernelSize ?? 5;
  // Block n: a 'same'-padded conv + ReLU (kernels seeded with n), then 2x2 max-pooling.
  const convBlock = (n: number, filters: number, inputShape?: number[]): tfl.layers.Layer[] => [
    tfl.layers.conv2d({
      name: `conv${n}`,
      ...(inputShape === undefined ? {} : { inputShape }),
      filters,
      kernelSize,
      padding: 'same',
      activation: 'relu',
      kernelInitializer: tfl.initializers.heNormal({ seed: n }),
    }),
    tfl.layers.maxPooling2d({ name: `pool${n}`, poolSize: 2 }),
  ];
  return tfl.sequential({
    name: 'mnist',
    layers: [
      ...convBlock(1, first, [MNIST_SIDE, MNIST_SIDE, 1]),
      ...convBlock(2, second),
      tfl.layers.flatten({ name: 'flatten' }),
      tfl.layers.dense({
        name: 'hidden',
        units: options.hidden ?? 64,
        activation: 'relu',
        kernelInitializer: tfl.initializers.heNormal({ seed: 3 }),
      }),
      tfl.layers.dense({
        name: 'digit',
        units: MNIST_CLASSES,
        activation: 'softmax',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 4 }),
      }),
    ],
  });
}

/** Decodes a minibatch of MNIST records: pixels scaled to [0, 1], one-hot labels. */
export function decodeMnistBatch(records: readonly Uint8Array[], withLabels: boolean): Minibatch {
  const count = records.length;
  const pixels = new Float32Array(count * MNIST_PIXEL_BYTES);
  const labels = new Int32Array(count);
  records.forEach((record, i) => {
    if (record.length !== MNIST_RECORD_BYTES) {
      throw new RangeError(
        `Expected ${MNIST_RECORD_BYTES} bytes for an MNIST record but received ${record.length}`,
      );
    }
    labels[i] = record[0] as number;
    const base = i * MNIST_PIXEL_BYTES;
    for (let p = 0; p < MNIST_PIXEL_BYTES; p++) pixels[base + p] = (record[p + 1] as number) / 255;
  });
  const features = tf.tensor4d(pixels, [count, MNIST_SIDE, MNIST_SIDE, 1]);
  if (!withLabels) return { features };
  return {
    features,
    labels: tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), MNIST_CLASSES), 'float32')),
  };
}

/**
 * datasetFn of MNIST records (see `encodeMnistRecord`) on the batch path: minibatches cut from the
 * reader's batches and decoded once each; training records are window-shuffled within each task
 * (`shuffleBuffer` records per window, 0 for none). Prediction minibatches carry no labels.
 */
export function mnistDatasetFnWith(shuffleBuffer = MNIST_SHUFFLE_BUFFER): DatasetFn<Uint8Array> {
  return (records, mode, metadata) => {
    const shuffle =
      mode === 'training' && shuffleBuffer > 0
        ? { bufferSize: shuffleBuffer, seed: MNIST_SHUFFLE_SEED }
        : undefined;
    return minibatches(records, metadata.minibatchSize, shuffle === undefined ? {} : { shuffle }).map(
      (batch) => decodeMnistBatch(batch, mode !== 'prediction'),
    );
  };
}

/** {@link mnistDatasetFnWith} the default shuffle window. */
export const mnistDatasetFn: DatasetFn<Uint8Array> = mnistDatasetFnWith();

/** The MNIST CNN as a complete model definition: cross-entropy, Adam, accuracy. */
export function mnistDefinition(options: MnistModelOptions = {}): ModelDefinition<Uint8Array> {
  return {
    model: () => buildMnistModel(options),
    // The model ends in softmax, so this is cross-entropy on probabilities (not on logits).
    loss: (labels, outputs) =>
      tf.mean(tf.neg(tf.sum(tf.mul(labels, tf.log(tf.clipByValue(outputs, 1e-7, 1))), -1))) as tf.Scalar,
    optimizer: { name: 'adam', params: { learningRate: options.learningRate ?? 0.002 } },
    datasetFn: mnistDatasetFnWith(options.shuffleBuffer),
    evalMetrics: { accuracy: 'accuracy' },
    // decodeMnistBatch copies every record's bytes as its minibatch comes, and the shuffle window
    // of minibatches() keeps none past a batch the feed counts consumed: the reader may reuse the
    // batches. Dropped ones cost a third more CPU per record in garbage collection (bench/batch-path.mjs).
    reuseRecordMemory: true,
  };
}
