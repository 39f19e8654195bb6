import { tf } from '../../hooks/tfjs-commonjs.mjs';

interface SyncBackend {
  readSync(dataId: tf.DataId): tf.backend_util.BackendValues;
  makeTensorInfo(shape: number[], dtype: tf.DataType, values?: tf.backend_util.BackendValues): tf.TensorInfo;
}

/**
 * Registers, for `backendName` (`cpu` or `wasm`), an `UnsortedSegmentSum` kernel that adds each
 * slice of `x` into its segment's row in one pass: O(x.size). Returns a function that puts the
 * previous kernel back.
 *
 * Why: an embedding lookup's gradient is `tf.gather`'s, an unsorted segment sum over the table's
 * rows (`tfl.layers.embedding`) or the pulled rows (the distributed layer). TensorFlow.js' CPU
 * kernel (which the wasm backend borrows) runs four tensor ops per segment over the whole input,
 * O(segments x x.size): seconds per step at 1,000 rows, hours at 10^6. The worker registers it
 * on cpu and wasm when it selects them (`selectBackend`), for every model with an embedding.
 */
export function registerLinearSegmentSum(backendName: string): () => void {
  const previous = tf.getKernel(tf.UnsortedSegmentSum, backendName);
  if (previous !== undefined) tf.unregisterKernel(tf.UnsortedSegmentSum, backendName);
  tf.registerKernel({
    kernelName: tf.UnsortedSegmentSum,
    backendName,
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x, segmentIds } = inputs as { x: tf.TensorInfo; segmentIds: tf.TensorInfo };
      const { numSegments } = attrs as unknown as tf.UnsortedSegmentSumAttrs;
      const owner = backend as unknown as SyncBackend;
      const ids = owner.readSync(segmentIds.dataId) as Int32Array;
      const values = owner.readSync(x.dataId) as Float32Array | Int32Array;
      const idsRank = segmentIds.shape.length;
      if (x.shape.slice(0, idsRank).some((d, i) => d !== segmentIds.shape[i]))
        throw new RangeError(
          `Expected segment ids of shape [${segmentIds.shape.join(', ')}] to lead x of shape [${x.shape.join(', ')}] in unsortedSegmentSum`,
        );
      const inner = ids.length === 0 ? 0 : values.length / ids.length;
      const out =
        x.dtype === 'int32' ? new Int32Array(numSegments * inner) : new Float32Array(numSegments * inner);
      for (let i = 0; i < ids.length; i++) {
        const segment = ids[i] as number;
        // TensorFlow drops ids outside [0, numSegments).
        if (segment < 0 || segment >= numSegments) continue;
        const to = segment * inner;
        const from = i * inner;
        for (let j = 0; j < inner; j++) out[to + j] = (out[to + j] as number) + (values[from + j] as number);
      }
      return owner.makeTensorInfo([numSegments, ...x.shape.slice(idsRank)], x.dtype, out);
    },
  });
  return () => {
    tf.unregisterKernel(tf.UnsortedSegmentSum, backendName);
    if (previous !== undefined) tf.registerKernel(previous);
  };
}
