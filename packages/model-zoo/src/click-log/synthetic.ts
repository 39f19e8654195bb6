import { checkInteger, fmix32, SeededRandom } from '@edl/common';
import type { TFRecordCompression } from '@edl/recordio';
import type { GeneratedFiles } from '../cifar10/synthetic.js';
import { writeShardedTfRecords } from '../tf-example/sharded-tfrecords.js';
import { type ClickLogLayout, encodeClickExample, resolveClickLogLayout } from './schema.js';
import { ZipfSampler } from './zipf.js';

/** Options of a synthetic click log ({@link ClickLogSynthesizer}, {@link generateClickLog}). */
export interface ClickLogOptions extends ClickLogLayout {
  /** Distinct ids per categorical feature, all in `[0, vocabulary)` (default 10^6). */
  readonly vocabulary?: number;
  /** The Zipf exponent `s` of the ids (default 1.1). */
  readonly exponent?: number;
  /** The same seed gives the same clicks, and the same planted model (default 1). */
  readonly seed?: number;
}

/** A minibatch of clicks as typed arrays, row-major. */
export interface ClickBatch {
  /** `[n, categorical]` ids. */
  readonly ids: Int32Array;
  /** `[n, numeric]` features. */
  readonly numeric: Float32Array;
  /** `[n]` labels, 0 or 1. */
  readonly clicks: Float32Array;
}

const FACTOR_DIM = 4;
const WEIGHT_SCALE = 0.7;
const FACTOR_SCALE = 0.5;
const NOISE = 0.5;
const BIAS = -0.8;

/**
 * The model that decides the clicks, planted so that accuracy and AUC mean something: a
 * factorization machine plus noise. An Example clicks when `BIAS + sum_f w(id_f) + sum_{f<g}
 * <v(id_f), v(id_g)> + a . numeric + noise > 0`, with `w(id)` and `v(id)` (4 floats) normal and a
 * pure function of (seed, id), so that no table of 10^7 ids is ever held.
 */
export class PlantedClickModel {
  readonly #key: number;
  readonly numericWeights: Float64Array;

  constructor(seed: number, numeric: number) {
    this.#key = fmix32(seed ^ 0x2545f491);
    const random = new SeededRandom(seed ^ 0x7f4a7c15);
    this.numericWeights = Float64Array.from({ length: numeric }, () => 0.6 * random.normal());
  }

  /** A standard normal, a function of (seed, id, counter) alone (Box-Muller over two hashes). */
  #normal(id: number, counter: number): number {
    const a = fmix32(fmix32(id + Math.imul(counter, 0x9e3779b9)) ^ this.#key);
    const b = fmix32(a ^ 0x85ebca6b);
    const u1 = (a + 0.5) / 2 ** 32;
    const u2 = (b + 0.5) / 2 ** 32;
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** The planted score of one Example, before noise. */
  score(ids: ArrayLike<number>, numeric: ArrayLike<number>): number {
    let score = BIAS;
    const factors: number[][] = [];
    for (let f = 0; f < ids.length; f++) {
      const id = ids[f] as number;
      score += WEIGHT_SCALE * this.#normal(id, 0);
      factors.push(Array.from({ length: FACTOR_DIM }, (_, j) => FACTOR_SCALE * this.#normal(id, 1 + j)));
    }
    for (let f = 0; f < factors.length; f++)
      for (let g = f + 1; g < factors.length; g++)
        for (let j = 0; j < FACTOR_DIM; j++)
          score += (factors[f]?.[j] as number) * (factors[g]?.[j] as number);
    for (let j = 0; j < numeric.length; j++)
      score += (this.numericWeights[j] as number) * (numeric[j] as number);
    return score;
  }
}

/**
 * A click log, deterministic from its seed: each categorical feature draws a Zipf rank over
 * `vocabulary` ids (rank 1 the most frequent), feature `f`'s ranks shifted by `f * vocabulary /
 * categorical` so that the features' frequent ids differ; numeric features are standard normal;
 * the label comes from a {@link PlantedClickModel}.
 */
export class ClickLogSynthesizer {
  readonly vocabulary: number;
  readonly categorical: number;
  readonly numeric: number;
  readonly planted: PlantedClickModel;
  readonly #zipf: ZipfSampler;
  readonly #random: SeededRandom;

  constructor(options: ClickLogOptions = {}) {
    const layout = resolveClickLogLayout(options);
    this.categorical = layout.categorical;
    this.numeric = layout.numeric;
    this.vocabulary = checkInteger(options.vocabulary ?? 1_000_000, 'options.vocabulary', 1, 2 ** 31 - 1);
    const seed = checkInteger(options.seed ?? 1, 'options.seed', 0);
    this.#zipf = new ZipfSampler(this.vocabulary, options.exponent ?? 1.1);
    this.#random = new SeededRandom(seed);
    this.planted = new PlantedClickModel(seed, this.numeric);
  }

  /** The next `n` clicks. */
  batch(n: number): ClickBatch {
    checkInteger(n, 'n', 0);
    const { categorical: F, numeric: M, vocabulary: V } = this;
    const ids = new Int32Array(n * F);
    const numeric = new Float32Array(n * M);
    const clicks = new Float32Array(n);
    const random = this.#random;
    for (let i = 0; i < n; i++) {
      const rowIds = ids.subarray(i * F, (i + 1) * F);
      const rowNumeric = numeric.subarray(i * M, (i + 1) * M);
      for (let f = 0; f < F; f++) rowIds[f] = (this.#zipf.sample(random) - 1 + Math.floor((f * V) / F)) % V;
      for (let j = 0; j < M; j++) rowNumeric[j] = random.normal();
      clicks[i] = this.planted.score(rowIds, rowNumeric) + NOISE * random.normal() > 0 ? 1 : 0;
    }
    return { ids, numeric, clicks };
  }
}

/** Options of {@link generateClickLog}. */
export interface ClickLogFilesOptions extends ClickLogOptions {
  /** Directory to write into (created when missing). */
  readonly dir: string;
  /** Examples in all (default 100 000). */
  readonly records?: number;
  /** TFRecord files to spread them over (default 2). */
  readonly files?: number;
  /** How the files are stored (default none). */
  readonly compression?: TFRecordCompression;
  /** File name prefix (default `clicks`). */
  readonly prefix?: string;
}

/**
 * Writes a synthetic click log ({@link ClickLogSynthesizer}) as TFRecord files of
 * `tf.train.Example`s (`clickLogSpec`), named `<prefix>-00000-of-00002.tfrecord` as TensorFlow's
 * sharded writers name them. The same options give the same bytes.
 */
export async function generateClickLog(options: ClickLogFilesOptions): Promise<GeneratedFiles> {
  const synthesizer = new ClickLogSynthesizer(options);
  const { categorical: F, numeric: M } = synthesizer;
  return writeShardedTfRecords(options, { records: 100_000, prefix: 'clicks' }, (writer, count) => {
    for (let done = 0; done < count; ) {
      const batch = synthesizer.batch(Math.min(4096, count - done));
      for (let i = 0; i < batch.clicks.length; i++)
        writer.write(
          encodeClickExample(
            batch.ids.subarray(i * F, (i + 1) * F),
            batch.numeric.subarray(i * M, (i + 1) * M),
            batch.clicks[i] as number,
          ),
        );
      done += batch.clicks.length;
    }
  });
}
