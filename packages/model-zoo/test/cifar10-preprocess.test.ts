import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { IterDataset } from '@edl/data';
import { RecordIOReader } from '@edl/recordio';
import { type Minibatch, selectBackend } from '@edl/worker';
import type * as tf from '@tensorflow/tfjs-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CIFAR10_PREPROCESS_MODULE, cifar10DatasetFnWith, generateCifar10Like } from '../src/index.js';

type Augmentation = { dx: number; dy: number; flip: boolean };
/** The plain JavaScript module the threads run, imported here as well. */
const preprocess = (await import(CIFAR10_PREPROCESS_MODULE.href)) as {
  augmentationOf(seed: number, index: number): Augmentation;
  CIFAR10_MEAN: number[];
  CIFAR10_STD: number[];
};
const augmentation = preprocess.augmentationOf;
const mean = preprocess.CIFAR10_MEAN;
const std = preprocess.CIFAR10_STD;

let dir: string;
let recordList: Uint8Array[];
beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
  dir = await mkdtemp(path.join(tmpdir(), 'edl-cifar-pre-'));
  const [file] = (await generateCifar10Like({ dir, records: 200, files: 1, seed: 5 })).files;
  const reader = await RecordIOReader.open(file!.path);
  recordList = [];
  for await (const record of reader.records()) recordList.push(Uint8Array.from(record));
  reader.close();
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Independent reference of one preprocessed image: normalise, pad 4, crop at (4+dy, 4+dx), flip. */
function reference(record: Uint8Array, { dx, dy, flip }: Augmentation): number[] {
  const out: number[] = [];
  for (let y = 0; y < 32; y++) {
    for (let x = 0; x < 32; x++) {
      const sx = (flip ? 31 - x : x) + dx;
      const sy = y + dy;
      for (let c = 0; c < 3; c++) {
        const byte = sx < 0 || sx > 31 || sy < 0 || sy > 31 ? 0 : record[1 + (sy * 32 + sx) * 3 + c]!;
        out.push((byte / 255 - mean[c]!) / std[c]!);
      }
    }
  }
  return out;
}

async function collect(mode: 'training' | 'prediction', inputWorkers: number, batch = 32) {
  const fn = cifar10DatasetFnWith({ seed: 9 });
  const out: { features: Float32Array; labels?: Float32Array }[] = [];
  const batches = fn(
    IterDataset.fromIterable(async function* () {
      yield* recordList;
    }),
    mode,
    { minibatchSize: batch, reader: {}, inputWorkers },
  );
  for await (const { features, labels } of batches as AsyncIterable<Minibatch>) {
    out.push({
      features: (await (features as tf.Tensor).data()) as Float32Array,
      ...(labels ? { labels: (await labels.data()) as Float32Array } : {}),
    });
    (features as tf.Tensor).dispose();
    labels?.dispose();
  }
  return out;
}

describe('CIFAR-10 preprocessing', () => {
  it('draws every crop offset and both flips, deterministically per record', () => {
    const seen = { dx: new Set<number>(), dy: new Set<number>(), flip: new Set<boolean>() };
    for (let i = 0; i < 2000; i++) {
      const a = augmentation(3, i);
      expect(augmentation(3, i)).toEqual(a);
      seen.dx.add(a.dx);
      seen.dy.add(a.dy);
      seen.flip.add(a.flip);
    }
    expect([...seen.dx].sort((a, b) => a - b)).toEqual([-4, -3, -2, -1, 0, 1, 2, 3, 4]);
    expect([...seen.dy].sort((a, b) => a - b)).toEqual([-4, -3, -2, -1, 0, 1, 2, 3, 4]);
    expect(seen.flip).toEqual(new Set([true, false]));
    expect(Array.from({ length: 50 }, (_, i) => augmentation(3, i))).not.toEqual(
      Array.from({ length: 50 }, (_, i) => augmentation(4, i)),
    );
  });

  it('normalises, crops and flips on worker threads exactly as the reference, same as on the main thread', async () => {
    const threaded = await collect('training', 2);
    const inline = await collect('training', 0);
    expect(threaded).toHaveLength(Math.ceil(200 / 32));
    expect(threaded).toEqual(inline);
    let augmented = 0;
    for (let n = 0; n < 200; n++) {
      const batch = threaded[Math.floor(n / 32)]!;
      const i = n % 32;
      const a = augmentation(9, n);
      if (a.dx !== 0 || a.dy !== 0 || a.flip) augmented++;
      const got = Array.from(batch.features.subarray(i * 3072, (i + 1) * 3072));
      const want = reference(recordList[n]!, a);
      for (let k = 0; k < 3072; k += 97) expect(got[k]).toBeCloseTo(want[k]!, 5);
      const oneHot = Array.from(batch.labels!.subarray(i * 10, (i + 1) * 10));
      expect(oneHot.indexOf(1)).toBe(recordList[n]![0]);
    }
    expect(augmented).toBeGreaterThan(150);
  });

  it('does not augment or label prediction minibatches', async () => {
    const [first] = await collect('prediction', 1, 16);
    expect(first!.labels).toBeUndefined();
    const got = Array.from(first!.features.subarray(0, 3072));
    const want = reference(recordList[0]!, { dx: 0, dy: 0, flip: false });
    for (let k = 0; k < 3072; k += 31) expect(got[k]).toBeCloseTo(want[k]!, 5);
  });

  it('names the bad record when a thread fails', async () => {
    const bad = [...recordList.slice(0, 40)];
    bad[37] = new Uint8Array(10);
    const prepared = IterDataset.fromIterable(async function* () {
      yield* bad;
    })
      .batch(16)
      .mapParallel({
        module: CIFAR10_PREPROCESS_MODULE,
        export: 'preprocessCifar10Batch',
        args: { minibatchSize: 16 },
        workers: 2,
      });
    await expect(prepared.toArray()).rejects.toMatchObject({
      code: 'ERR_MAP_WORKER',
      message: expect.stringMatching(/element 2: Expected 3073 bytes for CIFAR-10 record 37 but received 10/),
    });
  });
});
