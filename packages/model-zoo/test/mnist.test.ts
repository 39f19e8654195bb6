import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { selectBackend, tf } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildMnistModel,
  decodeMnistBatch,
  isZooModel,
  loadMnistDigits,
  MNIST_RECORD_BYTES,
  writeMnistRecordIO,
  zooModelPath,
} from '../src/index.js';
import { readAll } from './helpers/read-all.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-mnist-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('loadMnistDigits', () => {
  it('reads the 10,000 digits of the mnist package, about 1,000 of each class', () => {
    const digits = loadMnistDigits();
    expect(digits.count).toBe(10_000);
    expect(digits.pixels.length).toBe(10_000 * 784);
    const perClass = new Array<number>(10).fill(0);
    for (const label of digits.labels) perClass[label] = (perClass[label] as number) + 1;
    expect(perClass).toEqual([1001, 1127, 991, 1032, 980, 863, 1014, 1070, 944, 978]);
    // Real strokes: some ink (bright pixels) on a dark background in every image.
    const first = digits.pixels.subarray(0, 784);
    expect(first.filter((v) => v > 200).length).toBeGreaterThan(20);
    expect(first.filter((v) => v === 0).length).toBeGreaterThan(400);
  });
});

describe('writeMnistRecordIO', () => {
  it('splits the digits into disjoint training and test files, the same bytes for the same seed', async () => {
    const a = await writeMnistRecordIO({ dir: path.join(dir, 'a'), seed: 3 });
    const b = await writeMnistRecordIO({ dir: path.join(dir, 'b'), seed: 3 });
    const c = await writeMnistRecordIO({
      dir: path.join(dir, 'c'),
      seed: 4,
      testRecords: 1000,
      trainFiles: 2,
    });
    expect(a.test.records).toBe(2000);
    expect(a.train.records).toBe(8000);
    expect(a.train.files.map((f) => f.records)).toEqual([2000, 2000, 2000, 2000]);
    expect(c.train.files.map((f) => f.records)).toEqual([4500, 4500]);
    for (const [x, y] of [...a.train.files, ...a.test.files].map((f, i) => [
      f.path,
      [...b.train.files, ...b.test.files][i]?.path,
    ])) {
      expect(readFileSync(y as string).equals(readFileSync(x as string))).toBe(true);
    }
    const test = await readAll(a.test.files[0]?.path as string);
    const train = (await Promise.all(a.train.files.map((f) => readAll(f.path)))).flat();
    expect(test).toHaveLength(2000);
    expect(new Set([...train, ...test].map((r) => r.length))).toEqual(new Set([MNIST_RECORD_BYTES]));
    const key = (r: Uint8Array) => Buffer.from(r).toString('base64');
    const trainKeys = new Set(train.map(key));
    // The mnist package holds a few byte-identical images; the split itself never repeats one.
    expect(test.filter((r) => trainKeys.has(key(r))).length).toBeLessThan(5);
    const testLabels = new Array<number>(10).fill(0);
    for (const r of test) testLabels[r[0] as number] = (testLabels[r[0] as number] as number) + 1;
    expect(Math.min(...testLabels)).toBeGreaterThan(120);
    const otherTest = await readAll(c.test.files[0]?.path as string);
    expect(otherTest.map(key).slice(0, 10)).not.toEqual(test.map(key).slice(0, 10));
  });

  it('rejects a test set as large as the data', async () => {
    await expect(writeMnistRecordIO({ dir: path.join(dir, 'd'), testRecords: 10_000 })).rejects.toThrow(
      'Expected fewer than 10000 for options.testRecords but received 10000',
    );
  });
});

describe('the mnist zoo model', () => {
  it('is a zoo name whose module exists', () => {
    expect(isZooModel('mnist')).toBe(true);
    expect(readFileSync(zooModelPath('mnist'), 'utf8')).toContain('mnistDefinition');
  });

  it('decodes records into [n, 28, 28, 1] pixels in [0, 1] and one-hot labels the CNN accepts', async () => {
    await selectBackend({ backend: 'cpu' });
    const records = [3, 7].map((label) => {
      const r = new Uint8Array(MNIST_RECORD_BYTES);
      r[0] = label;
      r[1] = 255;
      r[784] = 51;
      return r;
    });
    const batch = decodeMnistBatch(records, true);
    const features = batch.features as tf.Tensor;
    expect(features.shape).toEqual([2, 28, 28, 1]);
    const values = await features.data();
    expect(values[0]).toBe(1);
    expect(values[783]).toBeCloseTo(0.2, 6);
    expect(await (batch.labels as tf.Tensor).array()).toEqual([
      [0, 0, 0, 1, 0, 0, 0, 0, 0, 0],
      [0, 0, 0, 0, 0, 0, 0, 1, 0, 0],
    ]);
    const model = buildMnistModel();
    const output = model.predict(features) as tf.Tensor;
    expect(output.shape).toEqual([2, 10]);
    expect(() => decodeMnistBatch([new Uint8Array(10)], false)).toThrow(
      'Expected 785 bytes for an MNIST record but received 10',
    );
    tf.dispose([features, batch.labels as tf.Tensor, output]);
    model.dispose();
  });
});
