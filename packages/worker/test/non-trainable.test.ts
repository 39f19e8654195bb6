import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadNonTrainableWeights,
  ModelRunner,
  saveNonTrainableWeights,
  selectBackend,
  WorkerError,
} from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-nt-'));
  await selectBackend({ backend: 'cpu' });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function definition() {
  return {
    model: () =>
      tfl.sequential({
        layers: [
          tfl.layers.dense({ name: 'd', inputShape: [3], units: 2, kernelInitializer: 'ones' }),
          tfl.layers.batchNormalization({ name: 'bn' }),
        ],
      }),
    loss: (labels: tf.Tensor, outputs: tf.Tensor) => tf.losses.meanSquaredError(labels, outputs) as tf.Scalar,
    optimizer: { name: 'sgd' as const, params: {} },
    datasetFn: async function* () {},
    evalMetrics: {},
  };
}

describe('non-trainable weights (batch-norm statistics)', () => {
  it('travel from a trained runner through the file to a fresh one, changing its predictions', async () => {
    const trained = new ModelRunner(definition());
    const x = tf.tensor2d([
      [1, 2, 3],
      [4, 5, 6],
      [7, 8, 10],
    ]);
    // Training-mode passes move the moving mean and variance away from 0 and 1.
    for (let i = 0; i < 20; i++) tf.dispose(trained.model.apply(x, { training: true }) as tf.Tensor);
    const weights = await trained.readNonTrainable();
    expect(weights.map((w) => w.name)).toEqual(['bn/moving_mean', 'bn/moving_variance']);
    expect(Math.abs(weights[0]?.values[0] as number)).toBeGreaterThan(1);

    const file = saveNonTrainableWeights(path.join(dir, 'ckpt'), weights, 7);
    expect(file).toBe(path.join(dir, 'ckpt', 'non-trainable-weights.json'));
    const loaded = loadNonTrainableWeights(path.join(dir, 'ckpt', 'checkpoint-000000000007.edlckpt'));
    expect(loaded?.map((w) => [w.name, w.shape, Array.from(w.values)])).toEqual(
      weights.map((w) => [w.name, w.shape, Array.from(w.values)]),
    );

    const fresh = new ModelRunner(definition());
    const before = await fresh.predict(x).data();
    fresh.assignNonTrainable(loaded ?? []);
    const after = await fresh.predict(x).data();
    const expected = await trained.predict(x).data();
    expect(Array.from(after)).toEqual(Array.from(expected));
    expect(Array.from(before)).not.toEqual(Array.from(expected));
  });

  it('is absent for a checkpoint without the file, and refuses weights that do not fit', async () => {
    expect(loadNonTrainableWeights(path.join(dir, 'nothing-here'))).toBeUndefined();
    const runner = new ModelRunner(definition());
    expect(() =>
      runner.assignNonTrainable([{ name: 'bn/moving_mean', shape: [3], values: new Float32Array(3) }]),
    ).toThrow(WorkerError);
    await writeFile(path.join(dir, 'non-trainable-weights.json'), '{"format":"other"}');
    expect(() => loadNonTrainableWeights(dir)).toThrow(
      `${path.join(dir, 'non-trainable-weights.json')} is not an edl-non-trainable-weights-v1 file`,
    );
  });
});
