/**
 * bench/lib/cifar10-linear-model.mjs with the input work made as costly, relative to the step, as
 * in the seed's 2019 worker: the same preprocessing run EDL_BENCH_INPUT_REPEAT times (default 14)
 * per minibatch (see costly-preprocess.mjs), on the main thread with `inputWorkers` 0 (the
 * serialized loop) and on `inputWorkers` threads otherwise.
 */
import { tf } from '../../packages/worker/dist/index.js';
import * as linear from './cifar10-linear-model.mjs';

const repeat = Number(process.env.EDL_BENCH_INPUT_REPEAT ?? 14);
/** Overrides the worker's `inputWorkers` (A/B runs: prefetching with the input on the main thread). */
const workers = process.env.EDL_BENCH_INPUT_WORKERS;

async function* toMinibatches(prepared, withLabels) {
  const iterator = prepared.iterator();
  try {
    for (;;) {
      const next = await iterator.next();
      if (next.done) return;
      const { pixels, labels } = next.value;
      const features = tf.tensor4d(pixels, [labels.length, 32, 32, 3]);
      yield withLabels
        ? { features, labels: tf.tidy(() => tf.cast(tf.oneHot(tf.tensor1d(labels, 'int32'), 10), 'float32')) }
        : { features };
    }
  } finally {
    await iterator.return?.();
  }
}

export const model = linear.model;
export const loss = linear.loss;
export const optimizer = linear.optimizer;
export const evalMetrics = linear.evalMetrics;
export const datasetFn = (records, mode, metadata) =>
  toMinibatches(
    records.batch(metadata.minibatchSize).mapParallel({
      module: new URL('./costly-preprocess.mjs', import.meta.url),
      export: 'costlyPreprocess',
      args: { augment: mode === 'training', seed: 1, minibatchSize: metadata.minibatchSize, repeat },
      workers: workers === undefined ? (metadata.inputWorkers ?? 0) : Number(workers),
    }),
    mode !== 'prediction',
  );
