import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IterDataset } from '@edl/data';
import { RecordIOReader } from '@edl/recordio';
import { loadModelDefinition, selectBackend } from '@edl/worker';
import * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateCifar10Like, zooModelPath } from '../src/index.js';

let dir: string;
let files: string[];
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-cifar-'));
  files = (await generateCifar10Like({ dir, records: 640, files: 1, seed: 11 })).files.map((f) => f.path);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function* records(file: string): AsyncGenerator<Uint8Array> {
  const reader = await RecordIOReader.open(file);
  try {
    for await (const record of reader.records()) yield Uint8Array.from(record);
  } finally {
    reader.close();
  }
}

describe('the small CIFAR-10 CNN on the wasm backend', () => {
  it('loads as a TypeScript model definition and learns the synthetic data', async () => {
    const backend = await selectBackend({ backend: 'wasm' });
    expect(backend.name).toBe('wasm');
    const definition = await loadModelDefinition<Uint8Array>(zooModelPath('cifar10-small'));
    const model = definition.model();
    expect(model.layers.map((l) => l.getClassName())).toEqual(
      expect.arrayContaining(['Conv2D', 'BatchNormalization', 'MaxPooling2D']),
    );
    const optimizer = tf.train.momentum(0.02, 0.9);
    const losses: number[] = [];
    const batches = definition.datasetFn(
      IterDataset.fromIterable(() => records(files[0] as string)),
      'training',
      {
        minibatchSize: 32,
        reader: {},
      },
    );
    for await (const { features, labels } of batches) {
      const loss = optimizer.minimize(
        () =>
          definition.loss(
            labels as tf.Tensor,
            model.apply(features as tf.Tensor, { training: true }) as tf.Tensor,
          ),
        true,
      ) as tf.Scalar;
      losses.push((await loss.data())[0] as number);
      tf.dispose([features as tf.Tensor, labels as tf.Tensor, loss]);
    }
    expect(losses).toHaveLength(20);
    const head = ((losses[0] as number) + (losses[1] as number) + (losses[2] as number)) / 3;
    const tail = losses.slice(-3).reduce((a, b) => a + b, 0) / 3;
    expect(head).toBeGreaterThan(1.8);
    expect(tail).toBeLessThan(head * 0.6);
  }, 120_000);
});
