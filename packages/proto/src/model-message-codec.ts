import { toBinary } from '@bufbuild/protobuf';
import {
  type GetModelResponse,
  GetModelResponseSchema,
  type ReportGradientRequest,
  type ReportGradientResponse,
  type ReportVariablesRequest,
  type TaskRange,
  type Tensor,
} from './generated/edl/v1/master_pb.js';

/*
 * Hand-written protobuf encoders of the messages that carry a whole model or gradient set (every
 * training step sends one each way). protobuf-es's toBinary grows its buffer by doubling and copies
 * the result once more: about a dozen allocations and three copies of a model per message, which
 * left the master's garbage collector as busy as its optimizer. These compute the exact size first
 * and write into one buffer. Fields are written in field-number order and default values are
 * omitted, as protobuf-es does: test/model-message-codec.test.ts checks the bytes against the
 * generated toBinary. Decoding stays with the generated fromBinary (bytes fields are views of the
 * received buffer, so it copies nothing).
 */

const textEncoder = new TextEncoder();

export function varintSize(v: number): number {
  // v is a non-negative integer below 2^53.
  let size = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    size++;
  }
  return size;
}

function uint64Of(v: bigint): bigint {
  return BigInt.asUintN(64, v); // negative int64: ten-byte two's complement, as protobuf says
}

function varint64Size(v: bigint): number {
  if (v >= 0n && v <= 0x1fffffffffffffn) return varintSize(Number(v));
  let u = uint64Of(v);
  let size = 1;
  while (u >= 0x80n) {
    u >>= 7n;
    size++;
  }
  return size;
}

/** One field's worth of writing into an exactly sized buffer (also used by embedding-codec.ts). */
export class ExactWriter {
  readonly buffer: Buffer;
  #pos = 0;

  constructor(size: number) {
    this.buffer = Buffer.allocUnsafe(size);
  }

  get done(): boolean {
    return this.#pos === this.buffer.length;
  }

  varint(v: number): void {
    while (v >= 0x80) {
      this.buffer[this.#pos++] = (v % 0x80) | 0x80;
      v = Math.floor(v / 0x80);
    }
    this.buffer[this.#pos++] = v;
  }

  varint64(v: bigint): void {
    if (v >= 0n && v <= 0x1fffffffffffffn) {
      this.varint(Number(v));
      return;
    }
    let u = uint64Of(v);
    while (u >= 0x80n) {
      this.buffer[this.#pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buffer[this.#pos++] = Number(u);
  }

  tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  bytes(data: Uint8Array): void {
    this.buffer.set(data, this.#pos);
    this.#pos += data.length;
  }

  fixed32(v: number): void {
    this.buffer.writeUInt32LE(v >>> 0, this.#pos);
    this.#pos += 4;
  }
}

/** Sizes of a message's parts, computed once and used again while writing. */
interface TensorLayout {
  readonly name: Uint8Array;
  readonly shapeBytes: number;
  readonly body: number;
}

function tensorLayout(tensor: Tensor): TensorLayout {
  const name = textEncoder.encode(tensor.name);
  let shapeBytes = 0;
  for (const dim of tensor.shape) shapeBytes += varintSize(dim);
  let body = 0;
  if (name.length > 0) body += 1 + varintSize(name.length) + name.length;
  if (shapeBytes > 0) body += 1 + varintSize(shapeBytes) + shapeBytes;
  if (tensor.data.length > 0) body += 1 + varintSize(tensor.data.length) + tensor.data.length;
  return { name, shapeBytes, body };
}

function tensorsLayout(tensors: readonly Tensor[]): { layouts: TensorLayout[]; size: number } {
  const layouts = tensors.map(tensorLayout);
  let size = 0;
  for (const layout of layouts) size += 1 + varintSize(layout.body) + layout.body;
  return { layouts, size };
}

function writeTensors(
  w: ExactWriter,
  field: number,
  tensors: readonly Tensor[],
  layouts: TensorLayout[],
): void {
  tensors.forEach((tensor, i) => {
    const layout = layouts[i] as TensorLayout;
    w.tag(field, 2);
    w.varint(layout.body);
    if (layout.name.length > 0) {
      w.tag(1, 2);
      w.varint(layout.name.length);
      w.bytes(layout.name);
    }
    if (layout.shapeBytes > 0) {
      w.tag(2, 2);
      w.varint(layout.shapeBytes);
      for (const dim of tensor.shape) w.varint(dim);
    }
    if (tensor.data.length > 0) {
      w.tag(3, 2);
      w.varint(tensor.data.length);
      w.bytes(tensor.data);
    }
  });
}

export const int64FieldSize = (v: bigint) => (v === 0n ? 0 : 1 + varint64Size(v));
export const boolFieldSize = (v: boolean) => (v ? 2 : 0);
export const stringFieldSize = (bytes: Uint8Array) =>
  bytes.length === 0 ? 0 : 1 + varintSize(bytes.length) + bytes.length;

export function writeInt64(w: ExactWriter, field: number, v: bigint): void {
  if (v === 0n) return;
  w.tag(field, 0);
  w.varint64(v);
}

export function writeBool(w: ExactWriter, field: number, v: boolean): void {
  if (!v) return;
  w.tag(field, 0);
  w.varint(1);
}

function writeFixed32(w: ExactWriter, field: number, v: number): void {
  if (v === 0) return;
  w.tag(field, 5);
  w.fixed32(v);
}

export function writeString(w: ExactWriter, field: number, bytes: Uint8Array): void {
  if (bytes.length === 0) return;
  w.tag(field, 2);
  w.varint(bytes.length);
  w.bytes(bytes);
}

export function finish(w: ExactWriter): Buffer {
  if (!w.done) throw new Error('model message codec: size and bytes written disagree');
  return w.buffer;
}

function rangeBody(range: TaskRange): number {
  return int64FieldSize(range.taskId) + int64FieldSize(range.rangeStart) + int64FieldSize(range.rangeEnd);
}

/** ReportGradientRequest to its wire bytes (the same bytes as the generated toBinary). */
export function encodeReportGradientRequest(m: ReportGradientRequest): Buffer {
  const workerId = textEncoder.encode(m.workerId);
  const { layouts, size: tensorsSize } = tensorsLayout(m.gradients);
  const ranges = m.moreRanges.map(rangeBody);
  let size =
    stringFieldSize(workerId) +
    int64FieldSize(m.taskId) +
    int64FieldSize(m.rangeStart) +
    int64FieldSize(m.rangeEnd) +
    int64FieldSize(m.modelVersion) +
    tensorsSize +
    boolFieldSize(m.wantModel) +
    boolFieldSize(m.mirror) +
    boolFieldSize(m.wantUpdate);
  for (const body of ranges) size += 1 + varintSize(body) + body;
  const w = new ExactWriter(size);
  writeString(w, 1, workerId);
  writeInt64(w, 2, m.taskId);
  writeInt64(w, 3, m.rangeStart);
  writeInt64(w, 4, m.rangeEnd);
  writeInt64(w, 5, m.modelVersion);
  writeTensors(w, 6, m.gradients, layouts);
  m.moreRanges.forEach((range, i) => {
    w.tag(7, 2);
    w.varint(ranges[i] as number);
    writeInt64(w, 1, range.taskId);
    writeInt64(w, 2, range.rangeStart);
    writeInt64(w, 3, range.rangeEnd);
  });
  writeBool(w, 8, m.wantModel);
  writeBool(w, 9, m.mirror);
  writeBool(w, 10, m.wantUpdate);
  return finish(w);
}

/** ReportGradientResponse to its wire bytes. */
export function encodeReportGradientResponse(m: ReportGradientResponse): Buffer {
  const { layouts, size: tensorsSize } = tensorsLayout(m.variables);
  const status = m.status as number;
  const size =
    (status === 0 ? 0 : 1 + varintSize(status)) +
    int64FieldSize(m.modelVersion) +
    int64FieldSize(m.taskProgress) +
    tensorsSize +
    boolFieldSize(m.hasModel) +
    boolFieldSize(m.mirrored) +
    (m.modelChecksum === 0 ? 0 : 5) +
    int64FieldSize(m.updateVersion) +
    int64FieldSize(m.updateGradients) +
    int64FieldSize(m.updateLrDivisor);
  const w = new ExactWriter(size);
  if (status !== 0) {
    w.tag(1, 0);
    w.varint(status);
  }
  writeInt64(w, 2, m.modelVersion);
  writeInt64(w, 3, m.taskProgress);
  writeTensors(w, 4, m.variables, layouts);
  writeBool(w, 5, m.hasModel);
  writeBool(w, 6, m.mirrored);
  writeFixed32(w, 7, m.modelChecksum);
  writeInt64(w, 8, m.updateVersion);
  writeInt64(w, 9, m.updateGradients);
  writeInt64(w, 10, m.updateLrDivisor);
  return finish(w);
}

/** GetModelResponse to its wire bytes. */
export function encodeGetModelResponse(m: GetModelResponse): Buffer {
  // The optimizer's state goes once per mirroring worker, not per step: the generated encoder will do.
  if (m.optimizer !== undefined) return Buffer.from(toBinary(GetModelResponseSchema, m));
  const { layouts, size: tensorsSize } = tensorsLayout(m.variables);
  const size =
    int64FieldSize(m.version) + boolFieldSize(m.initialized) + tensorsSize + boolFieldSize(m.unchanged);
  const w = new ExactWriter(size);
  writeInt64(w, 1, m.version);
  writeBool(w, 2, m.initialized);
  writeTensors(w, 3, m.variables, layouts);
  writeBool(w, 4, m.unchanged);
  return finish(w);
}

/** ReportVariablesRequest to its wire bytes. */
export function encodeReportVariablesRequest(m: ReportVariablesRequest): Buffer {
  const workerId = textEncoder.encode(m.workerId);
  const { layouts, size: tensorsSize } = tensorsLayout(m.variables);
  const w = new ExactWriter(stringFieldSize(workerId) + tensorsSize);
  writeString(w, 1, workerId);
  writeTensors(w, 2, m.variables, layouts);
  return finish(w);
}
