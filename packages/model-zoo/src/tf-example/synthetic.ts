import { checkInteger, SeededRandom } from '@edl/common';
import type { TFRecordCompression } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';
import { encodeTfExample, TF_EXAMPLE_CLASSES, TF_EXAMPLE_FEATURES } from './definition.js';
import { writeShardedTfRecords } from './sharded-tfrecords.js';

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
  const seed = checkInteger(options.seed ?? 1, 'options.seed', 0);
  const means = new SeededRandom(1000);
  const centers = Array.from({ length: TF_EXAMPLE_CLASSES }, () =>
    Array.from({ length: TF_EXAMPLE_FEATURES }, () => means.normal() * 2),
  );
  const random = new SeededRandom(seed);
  const x = new Float32Array(TF_EXAMPLE_FEATURES);
  return writeShardedTfRecords(options, { records: 4000, prefix: 'examples' }, (writer, count, first) => {
    for (let i = 0; i < count; i++) {
      const label = random.int(TF_EXAMPLE_CLASSES);
      const center = centers[label] as number[];
      for (let j = 0; j < TF_EXAMPLE_FEATURES; j++) x[j] = (center[j] as number) + random.normal();
      writer.write(encodeTfExample(x, label, (first + i) % 10 === 9 ? undefined : 1));
    }
  });
}
