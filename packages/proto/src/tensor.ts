import { create } from '@bufbuild/protobuf';
import { describeValue, invalidArgument } from '@edl/common';
import { type Tensor, TensorSchema } from './generated/edl/v1/master_pb.js';

/** A dense float32 tensor with its name: how variables and gradients look outside the wire format. */
export interface NamedTensor {
  readonly name: string;
  readonly shape: readonly number[];
  readonly values: Float32Array;
}

const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** Number of elements of a shape (1 for a scalar), after checking every dimension. */
export function shapeSize(shape: readonly number[], name = 'shape'): number {
  let size = 1;
  for (const [i, dim] of shape.entries()) {
    if (!Number.isSafeInteger(dim) || dim < 0)
      invalidArgument('a non-negative integer', `${name}[${i}]`, dim, 'range');
    size *= dim;
  }
  return size;
}

/**
 * Encodes a tensor for the wire: the float32 values as little-endian bytes, copied once. With
 * `copy: false` (on little-endian hosts) the message's bytes are a view of `tensor.values`, for a
 * caller that hands over fresh values and never changes them before the message is sent.
 */
export function toTensorMessage(tensor: NamedTensor, options: { readonly copy?: boolean } = {}): Tensor {
  if (!(tensor.values instanceof Float32Array)) {
    throw new TypeError(
      `Expected a Float32Array for tensor '${tensor.name}' values but received ${describeValue(tensor.values)}`,
    );
  }
  const size = shapeSize(tensor.shape, `tensor '${tensor.name}' shape`);
  if (size !== tensor.values.length) {
    throw new RangeError(
      `Expected ${size} values for tensor '${tensor.name}' of shape [${tensor.shape.join(', ')}] but received ${tensor.values.length}`,
    );
  }
  if (littleEndian && options.copy === false) {
    const view = new Uint8Array(tensor.values.buffer, tensor.values.byteOffset, tensor.values.length * 4);
    return create(TensorSchema, { name: tensor.name, shape: [...tensor.shape], data: view });
  }
  const bytes = new Uint8Array(tensor.values.length * 4);
  if (littleEndian) {
    bytes.set(new Uint8Array(tensor.values.buffer, tensor.values.byteOffset, bytes.length));
  } else {
    const view = new DataView(bytes.buffer);
    for (let i = 0; i < tensor.values.length; i++) view.setFloat32(i * 4, tensor.values[i] as number, true);
  }
  return create(TensorSchema, { name: tensor.name, shape: [...tensor.shape], data: bytes });
}

/**
 * Decodes a wire tensor into its own aligned Float32Array, after checking its size; into `target`
 * instead when it has exactly that size (a receiver that reuses its arrays, message after message).
 */
export function fromTensorMessage(message: Tensor, target?: Float32Array): NamedTensor {
  const size = shapeSize(message.shape, `tensor '${message.name}' shape`);
  if (message.data.length !== size * 4) {
    throw new RangeError(
      `Expected ${size * 4} bytes for tensor '${message.name}' of shape [${message.shape.join(', ')}] but received ${message.data.length}`,
    );
  }
  const values = target?.length === size ? target : new Float32Array(size);
  if (littleEndian) {
    new Uint8Array(values.buffer, values.byteOffset, size * 4).set(message.data);
  } else {
    const view = new DataView(message.data.buffer, message.data.byteOffset, message.data.length);
    for (let i = 0; i < size; i++) values[i] = view.getFloat32(i * 4, true);
  }
  return { name: message.name, shape: [...message.shape], values };
}
