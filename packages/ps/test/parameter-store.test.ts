import { createOptimizer } from '@edl/common';
import { GradientStatus } from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { ParameterStoreError } from '../src/errors.js';
import { DEFAULT_ASYNC_MAX_STALENESS, defaultMaxStaleness, ParameterStore } from '../src/parameter-store.js';

const w = (values: number[]) => ({ name: 'w', shape: [values.length], values: new Float32Array(values) });

describe('optimizers', () => {
  it('SGD: w -= lr * g', () => {
    const opt = createOptimizer({ type: 'sgd', learningRate: 0.5 });
    const weights = new Float32Array([1, 2]);
    opt.beginStep();
    opt.apply('w', weights, new Float32Array([2, -2]));
    expect(Array.from(weights)).toEqual([0, 3]);
  });

  it('momentum accumulates velocity across steps (Keras semantics)', () => {
    const opt = createOptimizer({ type: 'momentum', learningRate: 0.1, momentum: 0.5 });
    const weights = new Float32Array([0]);
    for (let i = 0; i < 2; i++) {
      opt.beginStep();
      opt.apply('w', weights, new Float32Array([1]));
    }
    // v1 = -0.1, w1 = -0.1; v2 = 0.5 * -0.1 - 0.1 = -0.15, w2 = -0.25
    expect(weights[0]).toBeCloseTo(-0.25, 6);
    expect(opt.slots.get('w')?.get('momentum')?.[0]).toBeCloseTo(-0.15, 6);
  });

  it('Adam matches the closed form of its first steps', () => {
    const opt = createOptimizer({ type: 'adam', learningRate: 0.01, epsilon: 0 });
    const weights = new Float32Array([1]);
    opt.beginStep();
    opt.apply('w', weights, new Float32Array([3]));
    // First step of Adam moves by exactly lr * sign(g) when epsilon is 0.
    expect(weights[0]).toBeCloseTo(0.99, 6);
    opt.beginStep();
    opt.apply('w', weights, new Float32Array([3]));
    expect(weights[0]).toBeCloseTo(0.98, 6);
  });

  it('rejects unknown optimizers', () => {
    expect(() => createOptimizer({ type: 'rmsprop' } as never)).toThrow(
      new RangeError(
        `Expected one of 'sgd', 'momentum', 'adam', 'adagrad' for optimizer.type but received "rmsprop"`,
      ),
    );
  });
});

describe('ParameterStore', () => {
  it('sync mode averages gradsToWait gradients of the current version into one new version', () => {
    const store = new ParameterStore({
      mode: 'sync',
      gradsToWait: 2,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    store.initialize([w([10, 10])]);
    expect(store.checkGradient(0, [w([2, 4])])).toEqual({ ok: true });
    expect(store.applyGradient([w([2, 4])])).toBe(false);
    expect(store.version).toBe(0);
    expect(store.applyGradient([w([4, 0])])).toBe(true);
    expect(store.version).toBe(1);
    expect(Array.from(store.getModel().variables[0]!.values)).toEqual([7, 8]);
    expect(store.checkGradient(0, [w([1, 1])])).toEqual({ ok: false, status: GradientStatus.STALE });
  });

  it('async mode accepts gradients up to maxStaleness versions old', () => {
    const store = new ParameterStore({
      mode: 'async',
      maxStaleness: 1,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    store.initialize([w([0])]);
    store.applyGradient([w([1])]);
    store.applyGradient([w([1])]);
    expect(store.version).toBe(2);
    expect(store.checkGradient(1, [w([1])])).toEqual({ ok: true });
    expect(store.checkGradient(0, [w([1])])).toEqual({ ok: false, status: GradientStatus.STALE });
  });

  it('keeps the first initialisation only and rejects gradients that do not fit', () => {
    const store = new ParameterStore();
    expect(() => store.checkGradient(0, [w([1])])).toThrow(ParameterStoreError);
    expect(store.initialize([w([1, 2])])).toBe(true);
    expect(store.initialize([w([5])])).toBe(false);
    expect(() => store.checkGradient(0, [w([1])])).toThrow(
      new RangeError("Expected 2 values for the gradient of 'w' but received 1"),
    );
    expect(() => store.checkGradient(0, [{ ...w([1, 2]), name: 'nope' }])).toThrow(
      new RangeError("Expected the name of a model variable for a gradient but received 'nope'"),
    );
    // Two gradients of one variable would both be applied (and share one decoding array).
    expect(() => store.checkGradient(0, [w([1, 2]), w([3, 4])])).toThrow(
      new RangeError("Expected one gradient per variable but received 'w' twice"),
    );
  });

  it('serves a pinned version for evaluation after the model moved on', () => {
    const store = new ParameterStore({ optimizer: { type: 'sgd', learningRate: 1 } });
    store.initialize([w([5])]);
    store.pinCurrentVersion();
    store.applyGradient([w([1])]);
    expect(store.getModel(0).variables[0]!.values[0]).toBe(5);
    expect(store.getModel().variables[0]!.values[0]).toBe(4);
    store.unpin(0);
    expect(() => store.getModel(0)).toThrow(
      /Model version 0 is neither the current version \(1\) nor pinned/,
    );
  });

  it('snapshot and restore carry weights, version and optimizer slots', () => {
    const a = new ParameterStore({ optimizer: { type: 'adam' } });
    a.initialize([w([1, 2, 3])]);
    a.applyGradient([w([1, 1, 1])]);
    const b = new ParameterStore({ optimizer: { type: 'adam' } });
    b.restore(a.snapshot());
    a.applyGradient([w([0.5, 0, -1])]);
    b.applyGradient([w([0.5, 0, -1])]);
    expect(b.version).toBe(2);
    expect(Array.from(b.getModel().variables[0]!.values)).toEqual(
      Array.from(a.getModel().variables[0]!.values),
    );
  });

  it('defaults to async with a staleness bound, counting what it applies and refuses', () => {
    const store = new ParameterStore({ optimizer: { type: 'sgd', learningRate: 1 } });
    expect(store.mode).toBe('async');
    expect(store.maxStaleness).toBe(DEFAULT_ASYNC_MAX_STALENESS);
    store.initialize([w([0])]);
    for (let i = 0; i < 9; i++) store.applyGradient([w([1])]);
    // Version 9: a gradient of version 1 is 8 old (applied), one of version 0 is 9 old (refused).
    expect(store.checkGradient(1, [w([1])])).toEqual({ ok: true });
    store.applyGradient([w([1])], 1);
    expect(store.checkGradient(1, [w([1])])).toEqual({ ok: false, status: GradientStatus.STALE });
    const counts = store.gradientCounts;
    expect(counts.applied).toBe(10);
    expect(counts.stale).toBe(1);
    expect(counts.stalenessHistogram[0]).toBe(9);
    expect(counts.stalenessHistogram[8]).toBe(1);
    expect(new ParameterStore({ mode: 'sync' }).maxStaleness).toBe(0);
  });

  it('sizes the default staleness bound to the number of workers', () => {
    expect(defaultMaxStaleness(1)).toBe(DEFAULT_ASYNC_MAX_STALENESS);
    expect(defaultMaxStaleness(16)).toBe(32);
  });

  it('sync mode with maxStaleness averages gradients up to that many versions old', () => {
    const store = new ParameterStore({
      mode: 'sync',
      gradsToWait: 2,
      maxStaleness: 1,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    store.initialize([w([10])]);
    store.applyGradient([w([2])], 0);
    store.applyGradient([w([2])], 0);
    expect(store.version).toBe(1);
    // One version old: still joins the next update.
    expect(store.checkGradient(0, [w([4])])).toEqual({ ok: true });
    store.applyGradient([w([4])], 0);
    store.applyGradient([w([2])], 1);
    expect(store.version).toBe(2);
    expect(store.getModel().variables[0]!.values[0]).toBe(5);
    expect(store.checkGradient(0, [w([1])])).toEqual({ ok: false, status: GradientStatus.STALE });
  });

  it('staleness modulation divides the learning rate by the staleness (async)', () => {
    const store = new ParameterStore({
      maxStaleness: 4,
      stalenessModulation: true,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    store.initialize([w([0])]);
    store.applyGradient([w([1])]);
    store.applyGradient([w([1])], 1);
    store.applyGradient([w([1])]);
    expect(store.getModel().variables[0]!.values[0]).toBe(-3);
    // Computed on version 0, applied at version 3: a third of the step.
    store.applyGradient([w([3])], 0);
    expect(store.getModel().variables[0]!.values[0]).toBe(-4);
    expect(() => new ParameterStore({ stalenessModulation: 'yes' as never })).toThrow(
      new TypeError('Expected a boolean for stalenessModulation but received string'),
    );
  });
});
