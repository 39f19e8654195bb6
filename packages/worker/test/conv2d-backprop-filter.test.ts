/**
 * The wasm backend's Conv2DBackpropFilter (composed by @edl/worker: im2col + one matrix product)
 * against TensorFlow.js's own CPU kernel, over strides, paddings and channel counts (TensorFlow.js has
 * no gradient of dilated convolutions), and with the patch matrix cut into small blocks.
 */
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerConv2DBackpropFilter } from '../src/backends/conv2d-backprop-filter.js';
import { selectBackend } from '../src/index.js';

interface Case {
  readonly name: string;
  readonly input: [number, number, number, number];
  readonly filter: [number, number, number, number];
  readonly strides: [number, number];
  readonly pad: 'same' | 'valid' | number;
}

const cases: readonly Case[] = [
  {
    name: '3x3 valid, one channel',
    input: [4, 9, 9, 1],
    filter: [3, 3, 1, 5],
    strides: [1, 1],
    pad: 'valid',
  },
  { name: '3x3 same, 3 channels', input: [2, 8, 7, 3], filter: [3, 3, 3, 4], strides: [1, 1], pad: 'same' },
  { name: '5x3 stride 2 same', input: [3, 11, 10, 2], filter: [5, 3, 2, 3], strides: [2, 2], pad: 'same' },
  {
    name: '2x2 stride (1, 3) valid',
    input: [2, 6, 12, 4],
    filter: [2, 2, 4, 2],
    strides: [1, 3],
    pad: 'valid',
  },
  { name: 'explicit padding 1', input: [2, 7, 7, 3], filter: [3, 3, 3, 2], strides: [1, 1], pad: 1 },
];

/** Deterministic values in [-1, 1). */
function values(size: number, seed: number): Float32Array {
  const out = new Float32Array(size);
  let state = seed >>> 0;
  for (let i = 0; i < size; i++) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    out[i] = state / 2 ** 31 - 1;
  }
  return out;
}

/** d(sum(conv2d(x, w) * dy))/dw: Conv2DBackpropFilter of (x, dy) on the current backend. */
function filterGradient(c: Case): Float32Array {
  return tf.tidy(() => {
    const size = (shape: readonly number[]) => shape.reduce((a, b) => a * b, 1);
    const x = tf.tensor4d(values(size(c.input), 1), c.input);
    const w = tf.tensor4d(values(size(c.filter), 2), c.filter);
    const conv = (filter: tf.Tensor4D) => tf.conv2d(x, filter, c.strides, c.pad);
    const outShape = conv(w).shape;
    const dy = tf.tensor(values(size(outShape), 3), outShape);
    const gradient = tf.grad((filter: tf.Tensor) => tf.sum(tf.mul(conv(filter as tf.Tensor4D), dy)))(w);
    return gradient.dataSync() as Float32Array;
  });
}

function expectClose(actual: Float32Array, expected: Float32Array): void {
  expect(actual.length).toBe(expected.length);
  let worst = 0;
  for (let i = 0; i < actual.length; i++) {
    worst = Math.max(worst, Math.abs((actual[i] as number) - (expected[i] as number)));
  }
  expect(worst).toBeLessThan(1e-4);
}

describe('Conv2DBackpropFilter on wasm', () => {
  const expected = new Map<string, Float32Array>();
  beforeAll(async () => {
    await tf.setBackend('cpu');
    for (const c of cases) expected.set(c.name, filterGradient(c));
    const selected = await selectBackend({ backend: 'wasm' });
    expect(selected.name).toBe('wasm');
  });
  afterAll(() => {
    // Back to the kernel every other test uses.
    tf.unregisterKernel(tf.Conv2DBackpropFilter, 'wasm');
    registerConv2DBackpropFilter('wasm');
  });

  for (const c of cases) {
    it(`matches the CPU kernel: ${c.name}`, () => {
      expectClose(filterGradient(c), expected.get(c.name) as Float32Array);
    });
  }

  it('gives the same gradient when the patch matrix is built in small blocks', () => {
    tf.unregisterKernel(tf.Conv2DBackpropFilter, 'wasm');
    // 40 elements: blocks of one or two output positions, with a short last block.
    registerConv2DBackpropFilter('wasm', 40);
    for (const c of cases) expectClose(filterGradient(c), expected.get(c.name) as Float32Array);
  });
});
