import { createOptimizer, SeededRandom } from '@edl/common';
import { EmbeddingTable } from '@edl/ps';
import * as tf from '@tensorflow/tfjs-core';
import { beforeAll, describe, expect, it } from 'vitest';
import { selectBackend } from '../src/index.js';

beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
});

const closeTo = (actual: Float32Array, expected: Float32Array, tolerance: number) => {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < actual.length; i++)
    worst = Math.max(worst, Math.abs((actual[i] as number) - (expected[i] as number)));
  expect(worst).toBeLessThan(tolerance);
};

describe("Adagrad against TensorFlow.js' tf.train.adagrad", () => {
  it('the dense optimizer of @edl/common follows it to 1e-6 over 30 steps', () => {
    const random = new SeededRandom(4);
    const initial = Float32Array.from({ length: 64 }, () => random.normal());
    const ours = initial.slice();
    const theirs = tf.variable(tf.tensor1d(initial));
    const optimizer = createOptimizer({ type: 'adagrad', learningRate: 0.05, initialAccumulatorValue: 0.1 });
    const reference = tf.train.adagrad(0.05, 0.1);
    for (let step = 0; step < 30; step++) {
      const gradient = Float32Array.from({ length: 64 }, () => random.normal() * (step % 2 === 0 ? 1 : 0.1));
      optimizer.beginStep();
      optimizer.apply('w', ours, gradient);
      reference.applyGradients([{ name: theirs.name, tensor: tf.tensor1d(gradient) }]);
    }
    closeTo(ours, theirs.dataSync() as Float32Array, 1e-6);
    reference.dispose();
    theirs.dispose();
  });

  it('the sparse kernel on an embedding table follows it on the dense table, untouched rows included', () => {
    const rows = 40;
    const dim = 4;
    const table = new EmbeddingTable({
      name: 't',
      dim,
      seed: 9,
      optimizer: { type: 'adagrad', learningRate: 0.1, initialAccumulatorValue: 0.2 },
    });
    const allIds = Float64Array.from({ length: rows }, (_, i) => i);
    const dense = tf.variable(tf.tensor2d(table.lookup(allIds), [rows, dim]));
    const reference = tf.train.adagrad(0.1, 0.2);
    const random = new SeededRandom(8);
    for (let step = 0; step < 20; step++) {
      const ids = Float64Array.from({ length: 6 }, () => random.int(rows));
      const gradients = Float32Array.from({ length: 6 * dim }, () => random.normal());
      table.push(ids, gradients);
      // The dense table's gradient: zero rows except the pushed ids, repeats summed.
      const denseGradient = tf.tidy(() =>
        tf.unsortedSegmentSum(
          tf.tensor2d(gradients, [6, dim]),
          tf.tensor1d(Int32Array.from(ids), 'int32'),
          rows,
        ),
      );
      reference.applyGradients([{ name: dense.name, tensor: denseGradient }]);
      denseGradient.dispose();
    }
    closeTo(table.lookup(allIds), dense.dataSync() as Float32Array, 1e-6);
    reference.dispose();
    dense.dispose();
  });
});
