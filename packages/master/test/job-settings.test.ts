/** The mapping from a job's settings to the master's options, and the optimizer keys it checks. */

import { createOptimizer } from '@edl/common';
import { ParameterStore } from '@edl/ps';
import { describe, expect, it } from 'vitest';
import { jobShardOptimizer, jobUpdates } from '../src/job-decay.js';
import { masterOptionsFor, optimizerConfigFromSpec, parameterStoreOptionsFor } from '../src/job-settings.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';

describe('createOptimizer', () => {
  it('rejects a key its optimizer does not take, naming the key, the accepted ones and the one meant', () => {
    expect(() => createOptimizer({ type: 'sgd', learning_rate: 0.5 } as never)).toThrow(
      new TypeError(
        `Expected one of 'learningRate', 'decay' for a parameter of the sgd optimizer but received "learning_rate" (did you mean 'learningRate'?)`,
      ),
    );
    expect(() => createOptimizer({ type: 'adam', learningRate: 0.1, momentum: 0.9 } as never)).toThrow(
      new TypeError(
        `Expected one of 'learningRate', 'beta1', 'beta2', 'epsilon', 'decay' for a parameter of the adam optimizer but received "momentum"`,
      ),
    );
  });

  it('so does the parameter store built on it; a key left undefined is no key', () => {
    expect(() => new ParameterStore({ optimizer: { type: 'momentum', Momentum: 0.5 } as never })).toThrow(
      /received "Momentum" \(did you mean 'momentum'\?\)$/,
    );
    expect(createOptimizer({ type: 'sgd', learningRate: undefined }).config).toEqual({
      type: 'sgd',
      learningRate: 0.01,
    });
  });
});

describe('optimizerConfigFromSpec', () => {
  it("maps a model definition's optimizer, nesterov as a boolean", () => {
    expect(
      optimizerConfigFromSpec({ name: 'adam', params: { learningRate: 0.02, beta1: 0.8 } }, 'm.ts'),
    ).toEqual({ type: 'adam', learningRate: 0.02, beta1: 0.8 });
    expect(
      optimizerConfigFromSpec({ name: 'momentum', params: { momentum: 0.5, nesterov: 1 } }, 'm.ts'),
    ).toEqual({ type: 'momentum', momentum: 0.5, nesterov: true });
    expect(optimizerConfigFromSpec({ name: 'sgd' }, 'm.ts')).toEqual({ type: 'sgd' });
  });

  it('names the model definition of an unknown parameter or optimizer', () => {
    expect(() =>
      optimizerConfigFromSpec({ name: 'sgd', params: { learning_rate: 0.1 } }, 'model.ts'),
    ).toThrow(
      new TypeError(
        `Expected one of 'learningRate', 'decay' for a parameter of the sgd optimizer in model.ts but received "learning_rate" (did you mean 'learningRate'?)`,
      ),
    );
    expect(() => optimizerConfigFromSpec({ name: 'rmsprop' }, 'model.ts')).toThrow(
      /^Expected one of 'sgd', 'momentum', 'adam', 'adagrad' for optimizer.name in model.ts but received "rmsprop"$/,
    );
  });
});

describe('masterOptionsFor', () => {
  it('puts the learning rate over the optimizer and bounds staleness by the number of workers', () => {
    const options = masterOptionsFor({
      jobType: 'training',
      minibatchSize: 32,
      numWorkers: 10,
      optimizer: { type: 'momentum', learningRate: 0.1, momentum: 0.5 },
      learningRate: 0.02,
      checkpointDir: '/ckpt',
      http: { port: 0 },
    });
    expect(options).toEqual({
      jobType: 'training',
      minibatchSize: 32,
      parameterStore: {
        mode: 'async',
        maxStaleness: 20,
        optimizer: { type: 'momentum', learningRate: 0.02, momentum: 0.5 },
      },
      checkpointDir: '/ckpt',
      http: { port: 0 },
    });
    // What is left out keeps the master's default: no key at all, not an undefined one.
    expect(Object.keys(options)).not.toContain('numEpochs');
    const store = new ParameterStore(options.parameterStore);
    expect(store.optimizer.config).toEqual({
      type: 'momentum',
      learningRate: 0.02,
      momentum: 0.5,
      nesterov: false,
    });
  });

  it('sync mode takes no stale gradient unless a bound is given', () => {
    const sgd = { type: 'sgd' } as const;
    expect(parameterStoreOptionsFor({ jobType: 'training', mode: 'sync', optimizer: sgd }).maxStaleness).toBe(
      0,
    );
    expect(
      parameterStoreOptionsFor({ jobType: 'training', mode: 'sync', maxStaleness: 2, optimizer: sgd })
        .maxStaleness,
    ).toBe(2);
    expect(parameterStoreOptionsFor({ jobType: 'training', optimizer: sgd }).maxStaleness).toBe(8);
  });
});

describe('--learning-rate-decay: a schedule over the whole job', () => {
  const shards = [
    { name: 'a', start: 0, count: 100 },
    { name: 'b', start: 0, count: 33 },
  ];

  it('counts one update per minibatch, each shard ending with its partial one, per epoch', () => {
    // ceil(100 / 32) + ceil(33 / 32) = 4 + 2 = 6 minibatches an epoch.
    expect(jobUpdates(shards, 32, 3, { mode: 'async' })).toBe(18);
    // Sync mode averages gradsToWait gradients into each update.
    expect(jobUpdates(shards, 32, 3, { mode: 'sync', gradsToWait: 4 })).toBe(5);
  });

  it("puts the schedule on the master's optimizer, with the job's updates when no steps are given", async () => {
    const settings = {
      jobType: 'training',
      minibatchSize: 32,
      numEpochs: 3,
      optimizer: { type: 'adam', learningRate: 0.002 },
      learningRateDecay: { type: 'cosine' },
    } as const;
    const master = new Master({
      ...masterOptionsFor(settings),
      trainingShards: shards,
      logger: silentLogger,
    });
    expect(master.store.optimizer.config).toEqual({
      type: 'adam',
      learningRate: 0.002,
      beta1: 0.9,
      beta2: 0.999,
      epsilon: 1e-7,
      decay: { type: 'cosine', steps: 18, alpha: 0 },
    });
    const fixed = new Master({
      ...masterOptionsFor({ ...settings, learningRateDecay: { type: 'cosine', steps: 7, alpha: 0.5 } }),
      trainingShards: shards,
      logger: silentLogger,
    });
    expect(fixed.store.optimizer.config.decay).toEqual({ type: 'cosine', steps: 7, alpha: 0.5 });
    expect(
      new Master({
        ...masterOptionsFor({ ...settings, learningRateDecay: undefined }),
        trainingShards: shards,
        logger: silentLogger,
      }).store.optimizer.config.decay,
    ).toBeUndefined();
  });

  it("gives the parameter-server shards the master's optimizer with the same schedule", () => {
    for (const learningRateDecay of [{ type: 'cosine' }, { type: 'cosine', steps: 7, alpha: 0.5 }] as const) {
      const options = masterOptionsFor({
        jobType: 'training',
        minibatchSize: 32,
        numEpochs: 3,
        optimizer: { type: 'adagrad', learningRate: 0.1 },
        learningRateDecay,
      });
      const master = new Master({ ...options, trainingShards: shards, logger: silentLogger });
      const shardOptimizer = createOptimizer(jobShardOptimizer(options, shards));
      expect(shardOptimizer.config).toEqual(master.store.optimizer.config);
    }
  });
});
