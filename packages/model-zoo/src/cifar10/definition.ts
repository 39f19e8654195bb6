import type { DatasetFn, Minibatch, ModelDefinition } from '@edl/worker';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import {
  CIFAR10_CHANNELS,
  CIFAR10_CLASSES,
  CIFAR10_PIXEL_BYTES,
  CIFAR10_RECORD_BYTES,
  CIFAR10_SIDE,
} from './record-format.js';

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

/** Decodes a minibatch of CIFAR-10 records into tensors: pixels scaled to [0, 1], one-hot labels. */
function toMinibatch(batch: readonly Uint8Array[], withLabels: boolean): Minibatch {
  const pixels = new Float32Array(batch.length * CIFAR10_PIXEL_BYTES);
  const labels = new Int32Array(batch.length);
  batch.forEach((record, i) => {
    if (record.length !== CIFAR10_RECORD_BYTES) {
      throw new RangeError(
        `Expected ${CIFAR10_RECORD_BYTES} bytes for a CIFAR-10 record but received ${record.length}`,
      );
    }
    labels[i] = record[0] as number;
    const base = i * CIFAR10_PIXEL_BYTES;
    for (let j = 0; j < CIFAR10_PIXEL_BYTES; j++) pixels[base + j] = (record[j + 1] as number) / 255;
  });
  const features = tf.tensor4d(pixels, [batch.length, CIFAR10_SIDE, CIFAR10_SIDE, CIFAR10_CHANNELS]);
  if (!withLabels) return { features };
  return {
    features,
    labels: tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), CIFAR10_CLASSES), 'float32')),
  };
}

/**
 * seed 004's dataset_fn for CIFAR-10 records, on the shared records dataset: batch, then decode the
 * label byte and the pixels of each minibatch at once. Prediction minibatches carry no labels.
 */
export const cifar10DatasetFn: DatasetFn<Uint8Array> = (records, mode, metadata) =>
  records.batch(metadata.minibatchSize).map((batch) => toMinibatch(batch, mode !== 'prediction'));

/** A complete CIFAR-10 model definition with the given shape. */
export function cifar10Definition(options: Cifar10ModelOptions = {}): ModelDefinition<Uint8Array> {
  return {
    model: () => buildCifar10Model(options),
    // The model ends in softmax, so this is cross-entropy on probabilities (not on logits).
    loss: (labels, outputs) =>
      tf.mean(tf.neg(tf.sum(tf.mul(labels, tf.log(tf.clipByValue(outputs, 1e-7, 1))), -1))) as tf.Scalar,
    optimizer: { name: 'momentum', params: { learningRate: options.learningRate ?? 0.05, momentum: 0.9 } },
    datasetFn: cifar10DatasetFn,
    evalMetrics: { accuracy: 'accuracy' },
  };
}
