import { tf } from '../hooks/tfjs-commonjs.mjs';
import { WorkerError } from './errors.js';
import type { Features, Minibatch } from './model-definition.js';

/** Number of records in a minibatch: the first dimension of its labels or of its first feature. */
export function minibatchSize(batch: Minibatch): number {
  const first =
    batch.labels ?? (batch.features instanceof tf.Tensor ? batch.features : Object.values(batch.features)[0]);
  const size = first?.shape[0];
  if (size === undefined) {
    throw new WorkerError(
      'DATA_ERROR',
      'datasetFn yielded a minibatch without a batch dimension (no tensor or a scalar)',
    );
  }
  return size;
}

function sliceRows(tensor: tf.Tensor, offset: number, count: number): tf.Tensor {
  return tf.slice(tensor, [offset, ...tensor.shape.slice(1).map(() => 0)], [count, ...tensor.shape.slice(1)]);
}

/** Rows `[offset, offset + count)` of every tensor of a minibatch (a minibatch that spans two tasks). */
export function sliceMinibatch(batch: Minibatch, offset: number, count: number): Minibatch {
  const features: Features =
    batch.features instanceof tf.Tensor
      ? sliceRows(batch.features, offset, count)
      : Object.fromEntries(Object.entries(batch.features).map(([k, t]) => [k, sliceRows(t, offset, count)]));
  return batch.labels === undefined
    ? { features }
    : { features, labels: sliceRows(batch.labels, offset, count) };
}

/** Every tensor of a minibatch, for disposal. */
export function minibatchTensors(batch: Minibatch): tf.Tensor[] {
  const features = batch.features instanceof tf.Tensor ? [batch.features] : Object.values(batch.features);
  return batch.labels === undefined ? features : [...features, batch.labels];
}
