/**
 * A worker's replica against the master's own ParameterStore: started from the optimizer state the
 * master hands out, it must hold the master's model bit for bit after the same gradients, for every
 * optimizer, so that a `mirrored` answer's checksum matches.
 */
import type { OptimizerConfig } from '@edl/common';
import { ParameterStore } from '@edl/master';
import type { NamedTensor } from '@edl/proto';
import { ModelReplica, WorkerError } from '@edl/worker';
import { describe, expect, it } from 'vitest';

function random(seed: number) {
  let state = seed;
  return () => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state / 2 ** 32 - 0.5;
  };
}

const SHAPES: Record<string, number[]> = {
  'conv/kernel': [3, 3, 1, 4],
  'conv/bias': [4],
  'dense/kernel': [36, 10],
};

function tensors(next: () => number, scale: number): NamedTensor[] {
  return Object.entries(SHAPES).map(([name, shape]) => ({
    name,
    shape,
    values: Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => next() * scale),
  }));
}

/** What `getModel(-1, undefined, true)` gives a worker, taken straight from the store. */
function snapshotOf(store: ParameterStore) {
  const { version, variables } = store.getModel();
  const state = store.optimizerState();
  if (state === undefined) throw new Error('expected a mirrorable store');
  return {
    version,
    initialized: true,
    variables,
    optimizer: {
      config: state.config as unknown as Record<string, unknown>,
      step: state.step,
      slots: state.slots,
    },
  };
}

const OPTIMIZERS: OptimizerConfig[] = [
  { type: 'sgd', learningRate: 0.1 },
  { type: 'momentum', learningRate: 0.05, momentum: 0.9, nesterov: true },
  { type: 'adam', learningRate: 0.01 },
  { type: 'adam', learningRate: 0.01, decay: { type: 'cosine', steps: 6, alpha: 0.1 } },
];

describe('ModelReplica', () => {
  for (const optimizer of OPTIMIZERS) {
    it(`holds the master's ${optimizer.type}${optimizer.decay ? ' (cosine decay)' : ''} model bit for bit, from a replica started mid-training`, () => {
      const next = random(7);
      const store = new ParameterStore({ mode: 'async', optimizer });
      store.initialize(tensors(next, 1));
      // Three updates before the worker joins: its replica starts from non-zero slots and step.
      for (let i = 0; i < 3; i++) store.applyGradient(tensors(next, 0.1));
      const replica = ModelReplica.fromSnapshot(snapshotOf(store)) as ModelReplica;
      expect(replica.version).toBe(3);
      for (let i = 0; i < 20; i++) {
        const gradients = tensors(next, 0.1);
        store.applyGradient(gradients);
        replica.apply(gradients);
        expect(replica.checksum()).toBe(store.checksum());
      }
      expect(replica.version).toBe(store.version);
      const master = store.getModel().variables;
      for (const [i, variable] of replica.variables.entries()) {
        expect(variable.name).toBe(master[i]?.name);
        // Bit patterns, not values: -0 against 0 or two NaNs would pass toEqual.
        expect(new Uint32Array(variable.values.buffer)).toEqual(
          new Uint32Array(master[i]?.values.slice().buffer as ArrayBuffer),
        );
      }
    });
  }

  it('copies what it was given: the snapshot arrays are not changed by its updates', () => {
    const next = random(3);
    const store = new ParameterStore({ mode: 'async', optimizer: { type: 'sgd', learningRate: 1 } });
    store.initialize(tensors(next, 1));
    const snapshot = snapshotOf(store);
    const before = snapshot.variables.map((v) => Float32Array.from(v.values));
    const replica = ModelReplica.fromSnapshot(snapshot) as ModelReplica;
    replica.apply(tensors(next, 1));
    expect(snapshot.variables.map((v) => Float32Array.from(v.values))).toEqual(before);
  });

  it('hands out copies in two alternating sets: the previous one stays as it was until the next', () => {
    const next = random(11);
    const store = new ParameterStore({ mode: 'async', optimizer: { type: 'sgd', learningRate: 1 } });
    store.initialize(tensors(next, 1));
    const replica = ModelReplica.fromSnapshot(snapshotOf(store)) as ModelReplica;
    const first = replica.copies();
    const kept = first.map((v) => Float32Array.from(v.values));
    replica.apply(tensors(next, 1));
    const second = replica.copies();
    // The first set is a backend's model until the second replaces it: untouched by the update.
    expect(first.map((v) => Float32Array.from(v.values))).toEqual(kept);
    expect(second.map((v) => v.values)).toEqual(replica.variables.map((v) => v.values));
    expect(second[0]?.values).not.toBe(first[0]?.values);
    expect(second[0]?.values).not.toBe(replica.variables[0]?.values);
    // The third reuses the first set's arrays.
    expect(replica.copies()[0]?.values).toBe(first[0]?.values);
  });

  it('is undefined without an optimizer, and refuses state that fits no variable', () => {
    const next = random(5);
    const variables = tensors(next, 1);
    expect(ModelReplica.fromSnapshot({ version: 0, initialized: true, variables })).toBeUndefined();
    const slot = { name: 'dense/kernel/m', shape: [2], values: new Float32Array(2) };
    const optimizer = { config: { type: 'adam' }, step: 1, slots: [slot] };
    expect(() => ModelReplica.fromSnapshot({ version: 0, initialized: true, variables, optimizer })).toThrow(
      /optimizer slot 'dense\/kernel\/m' \(2 values\), which fits no variable/,
    );
    const unknown = { config: { type: 'rmsprop' }, step: 0, slots: [] };
    const error = (() => {
      try {
        ModelReplica.fromSnapshot({ version: 0, initialized: true, variables, optimizer: unknown });
      } catch (caught) {
        return caught;
      }
    })();
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe('MASTER_ERROR');
    expect((error as Error).message).toMatch(/cannot mirror.*rmsprop/);
  });

  it('refuses a gradient for a variable it does not hold', () => {
    const next = random(9);
    const store = new ParameterStore({ mode: 'async', optimizer: { type: 'sgd' } });
    store.initialize(tensors(next, 1));
    const replica = ModelReplica.fromSnapshot(snapshotOf(store)) as ModelReplica;
    expect(() => replica.apply([{ name: 'other', shape: [1], values: new Float32Array(1) }])).toThrow(
      /The gradient of 'other' fits no variable/,
    );
    expect(replica.version).toBe(0);
  });
});
