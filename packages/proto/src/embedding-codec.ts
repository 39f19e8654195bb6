import type {
  PullEmbeddingsRequest,
  PullEmbeddingsResponse,
  PushEmbeddingGradientsRequest,
} from './generated/edl/v1/ps_pb.js';
import {
  boolFieldSize,
  ExactWriter,
  finish,
  int64FieldSize,
  stringFieldSize,
  varintSize,
  writeBool,
  writeInt64,
  writeString,
} from './model-message-codec.js';

/*
 * The ParameterServerService's hot messages (edl/v1/ps.proto): ids as float64 bytes and rows as float32
 * bytes, so that a pull of n ids of a dim-float table costs 8n bytes up and 4 x n x dim bytes down,
 * plus a few bytes of framing, and neither side touches the numbers one by one. Encoders write the
 * exact size into one buffer (as model-message-codec.ts does for the master's model messages), in
 * field-number order with default values omitted, the generated toBinary's bytes; decoding stays
 * with the generated fromBinary, whose bytes fields are views of the received buffer.
 */

const textEncoder = new TextEncoder();
const littleEndian = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;

/** The wire bytes of float values: a view of `values` on little-endian hosts, a converted copy otherwise. */
function toLittleEndianBytes(values: Float32Array | Float64Array): Uint8Array {
  if (littleEndian) return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
  const width = values.BYTES_PER_ELEMENT;
  const bytes = new Uint8Array(values.length * width);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < values.length; i++) {
    if (width === 8) view.setFloat64(i * 8, values[i] as number, true);
    else view.setFloat32(i * 4, values[i] as number, true);
  }
  return bytes;
}

interface FloatArrayType<A extends Float32Array | Float64Array> {
  readonly BYTES_PER_ELEMENT: number;
  new (length: number): A;
  new (buffer: ArrayBufferLike, byteOffset: number, length: number): A;
}

/**
 * Float values from their wire bytes: a view when the bytes are aligned on a little-endian host,
 * else a copy. `what` names the field in the error for a ragged length.
 */
function fromLittleEndianBytes<A extends Float32Array | Float64Array>(
  bytes: Uint8Array,
  type: FloatArrayType<A>,
  what: string,
): A {
  const width = type.BYTES_PER_ELEMENT;
  if (bytes.length % width !== 0) {
    throw new RangeError(
      `Expected a multiple of ${width} bytes for ${what} but received ${bytes.length} bytes`,
    );
  }
  const n = bytes.length / width;
  if (littleEndian && bytes.byteOffset % width === 0) return new type(bytes.buffer, bytes.byteOffset, n);
  const values = new type(n);
  if (littleEndian) new Uint8Array(values.buffer).set(bytes);
  else {
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.length);
    for (let i = 0; i < n; i++)
      values[i] = width === 8 ? view.getFloat64(i * 8, true) : view.getFloat32(i * 4, true);
  }
  return values;
}

/** The wire bytes of float64 ids (a view on little-endian hosts). */
export const idsToBytes = (ids: Float64Array): Uint8Array => toLittleEndianBytes(ids);

/** The wire bytes of float32 values, rows or gradients (a view on little-endian hosts). */
export const floatsToBytes = (values: Float32Array): Uint8Array => toLittleEndianBytes(values);

/** Float64 ids from their wire bytes (a view where aligned); `what` names the field in errors. */
export const bytesToIds = (bytes: Uint8Array, what: string): Float64Array =>
  fromLittleEndianBytes(bytes, Float64Array, what);

/** Float32 values from their wire bytes (a view where aligned); `what` names the field in errors. */
export const bytesToFloats = (bytes: Uint8Array, what: string): Float32Array =>
  fromLittleEndianBytes(bytes, Float32Array, what);

const uint32FieldSize = (v: number) => (v === 0 ? 0 : 1 + varintSize(v));

/** PullEmbeddingsRequest to its wire bytes (the same bytes as the generated toBinary). */
export function encodePullEmbeddingsRequest(m: PullEmbeddingsRequest): Buffer {
  const table = textEncoder.encode(m.table);
  const w = new ExactWriter(stringFieldSize(table) + stringFieldSize(m.ids) + boolFieldSize(m.create));
  writeString(w, 1, table);
  writeString(w, 2, m.ids);
  writeBool(w, 3, m.create);
  return finish(w);
}

/** PullEmbeddingsResponse to its wire bytes: the rows are copied once, into the message. */
export function encodePullEmbeddingsResponse(m: PullEmbeddingsResponse): Buffer {
  const w = new ExactWriter(uint32FieldSize(m.dim) + stringFieldSize(m.rows));
  writeUint32(w, 1, m.dim);
  writeString(w, 2, m.rows);
  return finish(w);
}

/** PushEmbeddingGradientsRequest to its wire bytes. */
export function encodePushEmbeddingGradientsRequest(m: PushEmbeddingGradientsRequest): Buffer {
  const table = textEncoder.encode(m.table);
  const workerId = textEncoder.encode(m.workerId);
  const w = new ExactWriter(
    stringFieldSize(table) +
      stringFieldSize(m.ids) +
      stringFieldSize(m.gradients) +
      int64FieldSize(m.modelVersion) +
      stringFieldSize(workerId) +
      uint32FieldSize(m.stepPushes),
  );
  writeString(w, 1, table);
  writeString(w, 2, m.ids);
  writeString(w, 3, m.gradients);
  writeInt64(w, 4, m.modelVersion);
  writeString(w, 5, workerId);
  writeUint32(w, 6, m.stepPushes);
  return finish(w);
}

/** A uint32 field, left out when 0 (proto3's default). */
function writeUint32(w: ExactWriter, field: number, value: number): void {
  if (value === 0) return;
  w.tag(field, 0);
  w.varint(value);
}
