import type * as tfTypes from '@tensorflow/tfjs-core';
import { tf } from '../../hooks/tfjs-commonjs.mjs';

/**
 * How the ids of one example combine: `sum`, `mean`, or `sqrtn` (the sum divided by the square root
 * of the number of ids), as TensorFlow's `embedding_lookup_sparse` and ElasticDL's layer name them.
 */
export type EmbeddingCombiner = 'sum' | 'mean' | 'sqrtn';

/**
 * The embedding lookup of a minibatch from the rows pulled for its unique ids: `rows` is
 * `[unique ids, dim]`, `indices` (from `uniqueIds`) has one entry per input id, laid out as
 * `idsShape`. Without a combiner the output is `[...idsShape, dim]`; with one, the last axis of the
 * ids (an example's ids) is combined: `[...idsShape without its last axis, dim]`.
 *
 * It is a `tf.gather` from `rows`, so the gradient with respect to `rows` is one row per unique id,
 * the gradients of an id's repeats summed (gather's gradient is an unsorted segment sum): the rows
 * gradient the parameter servers take, with no dense table anywhere.
 */
export function gatherRows(
  rows: tfTypes.Tensor,
  indices: Int32Array,
  idsShape: readonly number[],
  combiner?: EmbeddingCombiner,
): tfTypes.Tensor {
  const count = idsShape.reduce((n, d) => n * d, 1);
  if (count !== indices.length)
    throw new RangeError(
      `Expected ${count} indices for ids of shape [${idsShape.join(', ')}] but received ${indices.length}`,
    );
  if (combiner !== undefined && (idsShape.length < 2 || (idsShape[idsShape.length - 1] as number) < 1))
    throw new RangeError(
      `Expected ids of rank 2 or more with at least one id per example (the last axis) for combiner '${combiner}' but received shape [${idsShape.join(', ')}]`,
    );
  return tf.tidy(() => {
    const gathered = tf.gather(rows, tf.tensor(indices, [...idsShape], 'int32'));
    if (combiner === undefined) return gathered;
    const summed = tf.sum(gathered, -2);
    const perExample = idsShape[idsShape.length - 1] as number;
    if (combiner === 'sum') return summed;
    return tf.div(summed, combiner === 'mean' ? perExample : Math.sqrt(perExample));
  });
}
