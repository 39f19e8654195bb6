import { SeededRandom } from '@edl/common';
import { beforeAll, describe, expect, it } from 'vitest';
import { registerLinearSegmentSum, selectBackend, tf } from '../src/index.js';

// The stock cpu backend first (selectBackend would register the linear kernel at once).
beforeAll(async () => {
  await tf.setBackend('cpu');
});

function results(x: tf.Tensor, ids: tf.Tensor1D, table: tf.Variable, indices: tf.Tensor) {
  const sums = tf.unsortedSegmentSum(x, ids, 25);
  const { grads } = tf.variableGrads(() => tf.sum(tf.mul(tf.gather(table, indices), 1.5)), [table]);
  const out = {
    sums: Array.from(sums.dataSync()),
    shape: sums.shape,
    grad: Array.from(grads[table.name]!.dataSync()),
  };
  tf.dispose([sums, ...Object.values(grads)]);
  return out;
}

describe('registerLinearSegmentSum', () => {
  it("gives TensorFlow.js' unsorted segment sums and gather gradients, and puts the old kernel back", () => {
    const random = new SeededRandom(17);
    const x = tf.tensor3d(
      Float32Array.from({ length: 60 * 3 * 2 }, () => random.normal()),
      [60, 3, 2],
    );
    // Repeats, and ids outside [0, 25) that TensorFlow drops.
    const ids = tf.tensor1d(
      Int32Array.from({ length: 60 }, (_, i) => (i === 7 ? -1 : i === 8 ? 30 : random.int(25))),
      'int32',
    );
    const table = tf.variable(tf.randomNormal([40, 5], 0, 1, 'float32', 3));
    const indices = tf.tensor2d(
      Int32Array.from({ length: 24 }, () => random.int(40)),
      [8, 3],
      'int32',
    );
    const stock = results(x, ids, table, indices);
    const before = tf.getKernel(tf.UnsortedSegmentSum, 'cpu');
    const restore = registerLinearSegmentSum('cpu');
    expect(tf.getKernel(tf.UnsortedSegmentSum, 'cpu')).not.toBe(before);
    const linear = results(x, ids, table, indices);
    restore();
    expect(linear.shape).toEqual([25, 3, 2]);
    expect(linear.shape).toEqual(stock.shape);
    linear.sums.forEach((v, i) => {
      expect(v).toBeCloseTo(stock.sums[i]!, 5);
    });
    linear.grad.forEach((v, i) => {
      expect(v).toBeCloseTo(stock.grad[i]!, 5);
    });
    // Rows no index names get zero gradient; named rows 1.5 per use.
    const uses = new Float64Array(40);
    for (const i of indices.dataSync()) uses[i]! += 1;
    linear.grad.forEach((v, k) => {
      expect(v).toBeCloseTo(1.5 * uses[Math.floor(k / 5)]!, 5);
    });
    expect(tf.getKernel(tf.UnsortedSegmentSum, 'cpu')).toBe(before);
  });

  it('is what selectBackend puts on the cpu backend, once per process', async () => {
    const stock = tf.getKernel(tf.UnsortedSegmentSum, 'cpu');
    await selectBackend({ backend: 'cpu' });
    const linear = tf.getKernel(tf.UnsortedSegmentSum, 'cpu');
    expect(linear).not.toBe(stock);
    await selectBackend({ backend: 'cpu' });
    expect(tf.getKernel(tf.UnsortedSegmentSum, 'cpu')).toBe(linear);
  });
});
