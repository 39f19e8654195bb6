import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { checkInteger, checkNonEmptyString, SeededRandom } from '@edl/common';
import { type TFRecordCompression, TFRecordWriter } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';
import { encodeTfExample, TF_EXAMPLE_CLASSES, TF_EXAMPLE_FEATURES } from './definition.js';

/** Options of {@link generateTfExampleRecords}. */
export interface TfExampleRecordsOptions {
  /** Directory to write into (created when missing). */
  readonly dir: string;
  /** Examples in all (default 4000). */
  readonly records?: number;
  /** TFRecord files to spread them over (default 2). */
  readonly files?: number;
  /** The same seed gives the same bytes (default 1). */
  readonly seed?: number;
  /** How the files are stored (default none). */
  readonly compression?: TFRecordCompression;
  /** File name prefix (default `examples`). */
  readonly prefix?: string;
}

/**
 * Writes TFRecord files of `tf.train.Example`s for the `tf-example` model: each class has its own
 * mean vector, the features are that mean plus noise, and every tenth Example omits `weight`
 * (exercising the spec's default). Files are named `<prefix>-00000-of-00002.tfrecord` as
 * TensorFlow's sharded writers name them (`.gz`/`.zz` appended when compressed).
 */
export async function generateTfExampleRecords(options: TfExampleRecordsOptions): Promise<GeneratedFiles> {
  const dir = checkNonEmptyString(options.dir, 'options.dir');
  const total = checkInteger(options.records ?? 4000, 'options.records', 1);
  const fileCount = checkInteger(options.files ?? 2, 'options.files', 1);
  const seed = checkInteger(options.seed ?? 1, 'options.seed', 0);
  const compression = options.compression ?? 'none';
  const prefix = options.prefix ?? 'examples';
  mkdirSync(dir, { recursive: true });
  const means = new SeededRandom(1000);
  const centers = Array.from({ length: TF_EXAMPLE_CLASSES }, () =>
    Array.from({ length: TF_EXAMPLE_FEATURES }, () => means.normal() * 2),
  );
  const random = new SeededRandom(seed);
  const files: { path: string; records: number }[] = [];
  const suffix = compression === 'gzip' ? '.gz' : compression === 'zlib' ? '.zz' : '';
  let written = 0;
  for (let f = 0; f < fileCount; f++) {
    const n = Math.floor((total * (f + 1)) / fileCount) - written;
    const name = `${prefix}-${String(f).padStart(5, '0')}-of-${String(fileCount).padStart(5, '0')}.tfrecord${suffix}`;
    const file = path.join(dir, name);
    const writer = TFRecordWriter.create(file, { compression });
    const x = new Float32Array(TF_EXAMPLE_FEATURES);
    for (let i = 0; i < n; i++) {
      const label = random.int(TF_EXAMPLE_CLASSES);
      const center = centers[label] as number[];
      for (let j = 0; j < TF_EXAMPLE_FEATURES; j++) x[j] = (center[j] as number) + random.normal();
      writer.write(encodeTfExample(x, label, (written + i) % 10 === 9 ? undefined : 1));
    }
    await writer.close();
    files.push({ path: file, records: n });
    written += n;
  }
  return { files, records: written };
}
