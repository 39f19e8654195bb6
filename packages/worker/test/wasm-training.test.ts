import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { describe, expect, it } from 'vitest';
import { selectBackend } from '../src/index.js';

/** A small CNN with every layer kind of the CIFAR-10 model: conv, batch norm, max and average pooling. */
function smallCnn(): tfl.LayersModel {
  const input = tfl.input({ shape: [16, 16, 3] });
  let x = tfl.layers
    .conv2d({
      filters: 8,
      kernelSize: 3,
      padding: 'same',
      kernelInitializer: tfl.initializers.glorotUniform({ seed: 1 }),
    })
    .apply(input) as tfl.SymbolicTensor;
  x = tfl.layers.batchNormalization().apply(x) as tfl.SymbolicTensor;
  x = tfl.layers.activation({ activation: 'relu' }).apply(x) as tfl.SymbolicTensor;
  x = tfl.layers.maxPooling2d({ poolSize: 2 }).apply(x) as tfl.SymbolicTensor;
  x = tfl.layers
    .conv2d({
      filters: 8,
      kernelSize: 3,
      padding: 'same',
      kernelInitializer: tfl.initializers.glorotUniform({ seed: 2 }),
    })
    .apply(x) as tfl.SymbolicTensor;
  x = tfl.layers.averagePooling2d({ poolSize: 2 }).apply(x) as tfl.SymbolicTensor;
  x = tfl.layers.flatten().apply(x) as tfl.SymbolicTensor;
  const output = tfl.layers
    .dense({ units: 4, kernelInitializer: tfl.initializers.glorotUniform({ seed: 3 }) })
    .apply(x) as tfl.SymbolicTensor;
  return tfl.model({ inputs: input, outputs: output });
}

/** Learnable images: class c lights up colour channel c % 3 in quadrant c, plus noise. */
function batch(size: number, seed: number): { xs: tf.Tensor4D; ys: tf.Tensor2D } {
  return tf.tidy(() => {
    const labels = Array.from({ length: size }, (_, i) => (i + seed) % 4);
    const images = new Float32Array(size * 16 * 16 * 3);
    let state = seed * 9301 + 49297;
    for (let n = 0; n < size; n++) {
      const c = labels[n] as number;
      for (let y = 0; y < 16; y++) {
        for (let x = 0; x < 16; x++) {
          const quadrant = (y < 8 ? 0 : 2) + (x < 8 ? 0 : 1);
          for (let ch = 0; ch < 3; ch++) {
            state = (state * 233280 + 1) % 2147483647;
            const noise = (state / 2147483647) * 0.3;
            images[((n * 16 + y) * 16 + x) * 3 + ch] = (quadrant === c && ch === c % 3 ? 0.8 : 0.1) + noise;
          }
        }
      }
    }
    return {
      xs: tf.tensor4d(images, [size, 16, 16, 3]),
      ys: tf.oneHot(tf.tensor1d(labels, 'int32'), 4) as tf.Tensor2D,
    };
  });
}

function lossOf(model: tfl.LayersModel, xs: tf.Tensor, ys: tf.Tensor): tf.Scalar {
  return tf.losses.softmaxCrossEntropy(ys, model.apply(xs, { training: true }) as tf.Tensor) as tf.Scalar;
}

async function gradientsOn(backend: 'cpu' | 'wasm'): Promise<Float32Array[]> {
  await selectBackend({ backend });
  const model = smallCnn();
  const { xs, ys } = batch(4, 7);
  const { grads } = tf.variableGrads(() => lossOf(model, xs, ys));
  const out = await Promise.all(
    model.trainableWeights.map(
      async (w) => (await (grads[w.originalName] as tf.Tensor).data()) as Float32Array,
    ),
  );
  tf.dispose([xs, ys, ...Object.values(grads)]);
  model.dispose();
  return out;
}

describe('wasm backend', () => {
  it('delegates the missing gradient kernels, matching cpu gradients', async () => {
    const selection = await selectBackend({ backend: 'wasm' });
    expect(selection.detail).toMatch(/\d+ kernels delegated to cpu/);
    const wasmGrads = await gradientsOn('wasm');
    const cpuGrads = await gradientsOn('cpu');
    expect(wasmGrads.length).toBe(cpuGrads.length);
    cpuGrads.forEach((grad, i) => {
      const other = wasmGrads[i] as Float32Array;
      expect(other.length).toBe(grad.length);
      const maxDiff = grad.reduce((m, g, j) => Math.max(m, Math.abs(g - (other[j] as number))), 0);
      expect(maxDiff).toBeLessThan(1e-3);
    });
  });

  it('trains a CNN with conv, batch norm and pooling: the loss decreases', async () => {
    const selection = await selectBackend({ backend: 'wasm' });
    expect(selection.name).toBe('wasm');
    expect(tf.getBackend()).toBe('wasm');
    const model = smallCnn();
    const optimizer = tf.train.adam(0.01);
    const losses: number[] = [];
    for (let step = 0; step < 25; step++) {
      const { xs, ys } = batch(16, step);
      const loss = optimizer.minimize(() => lossOf(model, xs, ys), true) as tf.Scalar;
      losses.push((await loss.data())[0] as number);
      tf.dispose([xs, ys, loss]);
    }
    const first = ((losses[0] as number) + (losses[1] as number)) / 2;
    const last = ((losses[23] as number) + (losses[24] as number)) / 2;
    expect(first).toBeGreaterThan(1);
    expect(last).toBeLessThan(first * 0.5);
  });
});
