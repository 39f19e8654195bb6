import { ADAGRAD_EPSILON, createOptimizer, OPTIMIZER_PARAMS, resolveOptimizerConfig } from '@edl/common';
import { describe, expect, it } from 'vitest';

describe('Adagrad', () => {
  it('defaults to TensorFlow.js and Keras: learning rate 0.001, accumulator 0.1', () => {
    expect(resolveOptimizerConfig({ type: 'adagrad' })).toEqual({
      type: 'adagrad',
      learningRate: 0.001,
      initialAccumulatorValue: 0.1,
    });
    expect(OPTIMIZER_PARAMS.adagrad).toEqual(['learningRate', 'initialAccumulatorValue', 'decay']);
  });

  it('follows acc += g^2; w -= lr * g / sqrt(acc + 1e-7) step by step', () => {
    const opt = createOptimizer({ type: 'adagrad', learningRate: 0.5, initialAccumulatorValue: 0.25 });
    const weights = new Float32Array([1, -2, 0]);
    const gradients = [
      [0.5, -1, 0],
      [2, 0.25, 0],
      [-1, -1, 0],
    ];
    const acc = [0.25, 0.25, 0.25];
    const expected = [1, -2, 0];
    for (const g of gradients) {
      opt.beginStep();
      opt.apply('w', weights, new Float32Array(g));
      g.forEach((gi, i) => {
        acc[i] = Math.fround((acc[i] as number) + gi * gi);
        expected[i] = Math.fround(
          (expected[i] as number) - (0.5 * gi) / Math.sqrt((acc[i] as number) + ADAGRAD_EPSILON),
        );
      });
      expect(Array.from(weights)).toEqual(expected);
      expect(Array.from(opt.slots.get('w')?.get('accumulator') ?? [])).toEqual(acc);
    }
    // A zero gradient leaves its element and its accumulator where they started.
    expect(weights[2]).toBe(0);
    expect(opt.slots.get('w')?.get('accumulator')?.[2]).toBe(Math.fround(0.25));
  });

  it('scales the learning rate by lrScale, as the other optimizers do', () => {
    const full = createOptimizer({ type: 'adagrad', learningRate: 0.2 });
    const half = createOptimizer({ type: 'adagrad', learningRate: 0.1 });
    const a = new Float32Array([1, 1]);
    const b = new Float32Array([1, 1]);
    full.apply('w', a, new Float32Array([0.3, -0.7]), 0.5);
    half.apply('w', b, new Float32Array([0.3, -0.7]));
    expect(Array.from(a)).toEqual(Array.from(b));
  });

  it('rejects a Keras-style key with the name meant, and a negative accumulator', () => {
    expect(() => createOptimizer({ type: 'adagrad', initial_accumulator_value: 0.1 } as never)).toThrow(
      /received "initial_accumulator_value" \(did you mean 'initialAccumulatorValue'\?\)$/,
    );
    expect(() => createOptimizer({ type: 'adagrad', initialAccumulatorValue: -1 })).toThrow(
      /optimizer\.initialAccumulatorValue/,
    );
  });
});

describe('the shared update rules', () => {
  it('leave the dense optimizers as they were: SGD, momentum and Adam on a known sequence', () => {
    // The closed forms of the rules before they were shared by the sparse kernels.
    const sgd = createOptimizer({ type: 'sgd', learningRate: 0.5 });
    const w = new Float32Array([1, 2]);
    sgd.apply('w', w, new Float32Array([2, -2]));
    expect(Array.from(w)).toEqual([0, 3]);

    const nesterov = createOptimizer({ type: 'momentum', learningRate: 0.1, momentum: 0.5, nesterov: true });
    const x = new Float32Array([0]);
    nesterov.apply('x', x, new Float32Array([1]));
    // v = -0.1; w += 0.5 * v - 0.1 = -0.15
    expect(x[0]).toBe(Math.fround(-0.15));

    const adam = createOptimizer({ type: 'adam', learningRate: 0.01, epsilon: 0 });
    const y = new Float32Array([1, 1]);
    adam.beginStep();
    adam.apply('y', y, new Float32Array([4, -0.5]));
    // The first Adam step moves each element by lr * sign(g) when epsilon is 0.
    expect(Array.from(y)).toEqual([Math.fround(0.99), Math.fround(1.01)]);
  });
});
