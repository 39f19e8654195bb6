// Types only: tfjs-core's own chained-op modules declare these methods on Tensor, but they are ES
// modules with extensionless imports that Node cannot load, and tfjs-core's Node bundle (the one
// Node resolves) registers none of them.
import type {} from '@tensorflow/tfjs-core/dist/public/chained_ops/register_all_chained_ops.js';
import { tf } from '../hooks/tfjs-commonjs.mjs';

/** Chained methods that call the op of the same name with the tensor first: `x.add(y)` is `tf.add(x, y)`. */
const SAME_NAME: readonly string[] = [
  'abs',
  'acos',
  'acosh',
  'add',
  'all',
  'any',
  'argMax',
  'argMin',
  'asin',
  'asinh',
  'atan',
  'atan2',
  'atanh',
  'avgPool',
  'batchNorm',
  'batchToSpaceND',
  'broadcastTo',
  'cast',
  'ceil',
  'clipByValue',
  'conv1d',
  'conv2d',
  'conv2dTranspose',
  'cos',
  'cosh',
  'cumprod',
  'cumsum',
  'depthToSpace',
  'depthwiseConv2d',
  'dilation2d',
  'div',
  'divNoNan',
  'dot',
  'elu',
  'equal',
  'erf',
  'euclideanNorm',
  'exp',
  'expandDims',
  'expm1',
  'fft',
  'floor',
  'floorDiv',
  'gather',
  'greater',
  'greaterEqual',
  'ifft',
  'irfft',
  'isFinite',
  'isInf',
  'isNaN',
  'leakyRelu',
  'less',
  'lessEqual',
  'localResponseNormalization',
  'log',
  'log1p',
  'logSigmoid',
  'logSoftmax',
  'logSumExp',
  'logicalAnd',
  'logicalNot',
  'logicalOr',
  'logicalXor',
  'matMul',
  'max',
  'maxPool',
  'maximum',
  'mean',
  'min',
  'minimum',
  'mirrorPad',
  'mod',
  'mul',
  'neg',
  'norm',
  'notEqual',
  'oneHot',
  'onesLike',
  'pad',
  'pool',
  'pow',
  'prelu',
  'prod',
  'reciprocal',
  'relu',
  'relu6',
  'reshape',
  'resizeBilinear',
  'resizeNearestNeighbor',
  'reverse',
  'rfft',
  'round',
  'rsqrt',
  'selu',
  'separableConv2d',
  'sigmoid',
  'sign',
  'sin',
  'sinh',
  'slice',
  'softmax',
  'softplus',
  'spaceToBatchND',
  'split',
  'sqrt',
  'square',
  'squaredDifference',
  'squeeze',
  'step',
  'stridedSlice',
  'sub',
  'sum',
  'tan',
  'tanh',
  'tile',
  'topk',
  'transpose',
  'unique',
  'unsortedSegmentSum',
  'unstack',
  'zerosLike',
];

type Method = (this: tf.Tensor, ...args: unknown[]) => unknown;

/** The chained methods whose op has another name or takes the tensor elsewhere. */
const SPECIAL: Readonly<Record<string, Method>> = {
  as1D() {
    return tf.reshape(this, [this.size]);
  },
  as2D(rows, columns) {
    return tf.reshape(this, [rows as number, columns as number]);
  },
  as3D(rows, columns, depth) {
    return tf.reshape(this, [rows as number, columns as number, depth as number]);
  },
  as4D(rows, columns, depth, depth2) {
    return tf.reshape(this, [rows as number, columns as number, depth as number, depth2 as number]);
  },
  as5D(rows, columns, depth, depth2, depth3) {
    return tf.reshape(this, [
      rows as number,
      columns as number,
      depth as number,
      depth2 as number,
      depth3 as number,
    ]);
  },
  asScalar() {
    if (this.size !== 1) throw new RangeError(`Expected 1 element for asScalar() but received ${this.size}`);
    return tf.reshape(this, []);
  },
  asType(dtype) {
    return tf.cast(this, dtype as tf.DataType);
  },
  flatten() {
    return tf.reshape(this, [this.size]);
  },
  reshapeAs(x) {
    return tf.reshape(this, (x as tf.Tensor).shape);
  },
  toBool() {
    return tf.cast(this, 'bool');
  },
  toFloat() {
    return tf.cast(this, 'float32');
  },
  toInt() {
    return tf.cast(this, 'int32');
  },
  concat(x, axis) {
    const others = x instanceof tf.Tensor ? [x] : (x as tf.Tensor[]);
    return tf.concat([this, ...others], axis as number | undefined);
  },
  stack(x, axis) {
    const others = x instanceof tf.Tensor ? [x] : (x as tf.Tensor[]);
    return tf.stack([this, ...others], axis as number | undefined);
  },
  where(condition, x) {
    return tf.where(condition as tf.Tensor, this, x as tf.Tensor);
  },
};

let registered = false;

/**
 * Adds TensorFlow.js's chained tensor methods (`tf.oneHot(labels, 10).toFloat()`, `x.square().mean()`)
 * to the Tensor class of the engine, as the union package `@tensorflow/tfjs` does. tfjs-core's Node
 * bundle registers none, so model code written for the union package would fail with "... is not
 * a function". Methods the class already has are kept. Idempotent.
 */
export function registerChainedOps(): void {
  if (registered) return;
  registered = true;
  const prototype = tf.Tensor.prototype as unknown as Record<string, unknown>;
  const ops = tf as unknown as Record<string, (...args: unknown[]) => unknown>;
  const define = (name: string, method: Method) => {
    if (name in prototype) return;
    Object.defineProperty(prototype, name, {
      configurable: true,
      writable: true,
      value: function chained(this: tf.Tensor, ...args: unknown[]) {
        this.throwIfDisposed();
        return method.apply(this, args);
      },
    });
  };
  for (const name of SAME_NAME) {
    const op = ops[name];
    if (typeof op === 'function')
      define(name, function (this: tf.Tensor, ...args) {
        return op(this, ...args);
      });
  }
  for (const [name, method] of Object.entries(SPECIAL)) define(name, method);
}
