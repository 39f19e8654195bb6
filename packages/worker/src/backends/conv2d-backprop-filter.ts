import { tf } from '../../hooks/tfjs-commonjs.mjs';

interface SyncBackend {
  write(values: tf.backend_util.BackendValues | null, shape: number[], dtype: tf.DataType): tf.DataId;
  readSync(dataId: tf.DataId): tf.backend_util.BackendValues;
}

/** Patch-matrix elements built at once: bounds the kernel's scratch memory (64 MiB of float32). */
const MAX_PATCH_ELEMENTS = 16 * 1024 * 1024;
/** Scratch arrays up to this size (16 MiB) are kept for the next call. */
const KEPT_SCRATCH_ELEMENTS = 4 * 1024 * 1024;
let kept: Float32Array | undefined;

function scratch(size: number): Float32Array {
  if (size > KEPT_SCRATCH_ELEMENTS) return new Float32Array(size);
  if (kept === undefined || kept.length < size) kept = new Float32Array(size);
  return kept.length === size ? kept : kept.subarray(0, size);
}

/**
 * Registers `Conv2DBackpropFilter` (the filter gradient of a convolution) for `backendName`, built
 * on the backend's fast matrix product: the input patches every output position sees are laid out
 * once as rows of a matrix (im2col, in one pass over the input, padding read as zeros), and the
 * filter gradient is `patches^T x dy`, `[kh*kw*ci, rows] x [rows, co]`, whose rows are already in
 * the filter's `[kh, kw, ci, co]` order. Long inputs go in blocks of rows, so scratch memory stays
 * bounded. The CPU backend's element-by-element version is two orders of magnitude slower and
 * dominated a CNN step on wasm; a strided slice per filter tap was still a fifth of the step (the
 * wasm backend slices in JavaScript). NHWC only, like every wasm convolution. `maxPatchElements`
 * sets the block size (tests use small blocks).
 */
export function registerConv2DBackpropFilter(
  backendName: string,
  maxPatchElements = MAX_PATCH_ELEMENTS,
): void {
  tf.registerKernel({
    kernelName: tf.Conv2DBackpropFilter,
    backendName,
    kernelFunc: ({ inputs, backend, attrs }) => {
      const { x, dy } = inputs as { x: tf.TensorInfo; dy: tf.TensorInfo };
      const { strides, pad, dataFormat, dimRoundingMode, filterShape } =
        attrs as unknown as tf.Conv2DBackpropFilterAttrs;
      if (dataFormat !== 'NHWC')
        throw new Error(`Conv2DBackpropFilter on ${backendName} supports NHWC only, not ${dataFormat}`);
      const info = tf.backend_util.computeConv2DInfo(
        x.shape as [number, number, number, number],
        filterShape,
        strides,
        1,
        pad,
        dimRoundingMode,
      );
      const owner = backend as unknown as SyncBackend;
      const input = owner.readSync(x.dataId) as Float32Array;
      const grad = owner.readSync(dy.dataId) as Float32Array;
      const depth = info.filterHeight * info.filterWidth * info.inChannels;
      const rows = info.batchSize * info.outHeight * info.outWidth;
      const block = Math.max(1, Math.min(rows, Math.floor(maxPatchElements / depth)));
      let sum: tf.Tensor | undefined;
      for (let first = 0; first < rows; first += block) {
        const count = Math.min(block, rows - first);
        // The wasm backend copies what it is given into its heap: one scratch array serves every
        // block and call (kept only while small).
        const patches = scratch(count * depth);
        fillPatches(patches, input, info, first, count);
        const part = tf.tidy(() =>
          tf.matMul(
            tf.tensor2d(patches, [count, depth]),
            tf.tensor2d(grad.subarray(first * info.outChannels, (first + count) * info.outChannels), [
              count,
              info.outChannels,
            ]),
            true,
            false,
          ),
        );
        if (sum === undefined) sum = part;
        else {
          const next = tf.add(sum, part);
          tf.dispose([sum, part]);
          sum = next;
        }
      }
      const values = (sum as tf.Tensor).dataSync() as Float32Array;
      (sum as tf.Tensor).dispose();
      return {
        dataId: owner.write(values, [...filterShape], 'float32'),
        shape: [...filterShape],
        dtype: 'float32' as const,
      };
    },
  });
}

/**
 * Rows `[first, first + count)` of the patch matrix: row r is output position (n, oh, ow), its
 * columns the input values under the filter's taps in `[kh, kw, ci]` order, zeros over padding.
 * A tap row that lies inside the input (the common case) is one contiguous run of `kw * ci` values.
 */
function fillPatches(
  patches: Float32Array,
  input: Float32Array,
  info: tf.backend_util.Conv2DInfo,
  first: number,
  count: number,
): void {
  const { inHeight, inWidth, inChannels, outHeight, outWidth, filterHeight, filterWidth } = info;
  const { strideHeight, strideWidth, dilationHeight, dilationWidth } = info;
  const { top, left } = info.padInfo;
  const run = filterWidth * inChannels;
  let ow = first % outWidth;
  let oh = Math.floor(first / outWidth) % outHeight;
  let n = Math.floor(first / (outWidth * outHeight));
  let at = 0;
  for (let r = 0; r < count; r++) {
    const iw0 = ow * strideWidth - left;
    const contiguous = dilationWidth === 1 && iw0 >= 0 && iw0 + filterWidth <= inWidth;
    for (let kh = 0; kh < filterHeight; kh++) {
      const ih = oh * strideHeight + kh * dilationHeight - top;
      if (ih < 0 || ih >= inHeight) {
        patches.fill(0, at, at + run);
        at += run;
      } else if (contiguous) {
        const from = ((n * inHeight + ih) * inWidth + iw0) * inChannels;
        for (let j = 0; j < run; j++) patches[at + j] = input[from + j] as number;
        at += run;
      } else {
        for (let kw = 0; kw < filterWidth; kw++) {
          const iw = iw0 + kw * dilationWidth;
          const from = ((n * inHeight + ih) * inWidth + iw) * inChannels;
          const inside = iw >= 0 && iw < inWidth;
          for (let c = 0; c < inChannels; c++) patches[at + c] = inside ? (input[from + c] as number) : 0;
          at += inChannels;
        }
      }
    }
    if (++ow === outWidth) {
      ow = 0;
      if (++oh === outHeight) {
        oh = 0;
        n++;
      }
    }
  }
}
