/**
 * The MNIST model of bench/train-vs-fit.mjs, as an `edl train --model-def` module: a small CNN
 * (conv 8 -> pool -> conv 16 -> pool -> dense 128 -> softmax 10, about 55,000 weights, 220 KB),
 * Adam 0.001, cross-entropy. `buildMnistCnn` is shared with the plain `model.fit` run, so both train
 * the same network from the same initial weights.
 */
import { tf, tfl } from '../../packages/worker/dist/index.js';

const SIDE = 28;
const PIXELS = SIDE * SIDE;

export function buildMnistCnn() {
  return tfl.sequential({
    name: 'mnist_cnn',
    layers: [
      tfl.layers.conv2d({
        name: 'conv1',
        inputShape: [SIDE, SIDE, 1],
        filters: 8,
        kernelSize: 3,
        activation: 'relu',
        kernelInitializer: tfl.initializers.heNormal({ seed: 1 }),
      }),
      tfl.layers.maxPooling2d({ name: 'pool1', poolSize: 2 }),
      tfl.layers.conv2d({
        name: 'conv2',
        filters: 16,
        kernelSize: 3,
        activation: 'relu',
        kernelInitializer: tfl.initializers.heNormal({ seed: 2 }),
      }),
      tfl.layers.maxPooling2d({ name: 'pool2', poolSize: 2 }),
      tfl.layers.flatten({ name: 'flatten' }),
      tfl.layers.dense({
        name: 'dense1',
        units: 128,
        activation: 'relu',
        kernelInitializer: tfl.initializers.heNormal({ seed: 3 }),
      }),
      tfl.layers.dense({
        name: 'logits',
        units: 10,
        activation: 'softmax',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 4 }),
      }),
    ],
  });
}

export const model = buildMnistCnn;

/** Cross-entropy on the softmax outputs, as Keras' categorical_crossentropy computes it. */
export const loss = (labels, outputs) =>
  tf.mean(tf.neg(tf.sum(tf.mul(labels, tf.log(tf.clipByValue(outputs, 1e-7, 1 - 1e-7))), -1)));

export const optimizer = { name: 'adam', params: { learningRate: 0.001 } };

export const evalMetrics = { accuracy: 'accuracy' };

/** Minibatches of records -> pixels (n x 28 x 28 x 1, 0-1) and one-hot labels, on the main thread. */
export const datasetFn = (records, mode, metadata) =>
  records.batch(metadata.minibatchSize).map((batch) => {
    const n = batch.length;
    const pixels = new Float32Array(n * PIXELS);
    const ids = new Int32Array(n);
    for (let i = 0; i < n; i++) {
      const record = batch[i];
      ids[i] = record[0];
      for (let p = 0; p < PIXELS; p++) pixels[i * PIXELS + p] = record[1 + p] / 255;
    }
    const features = tf.tensor4d(pixels, [n, SIDE, SIDE, 1]);
    if (mode === 'prediction') return { features };
    return { features, labels: tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(ids, 'int32'), 10), 'float32')) };
  });
