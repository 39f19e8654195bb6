import { toBinary } from '@bufbuild/protobuf';
import {
  type Task,
  type TaskBatchStreamRequest,
  type TaskBatchStreamResponse,
  type TaskStreamRequest,
  type TaskStreamResponse,
  WorkerStatsSchema,
} from './generated/edl/v1/master_pb.js';

/*
 * The encoding half of the task-stream codec (see task-stream-codec.ts): one growing buffer that
 * each encode call fills from the start, then copies out. Sub-messages are written in place and
 * their length prefix fixed up after, so a message is written in one pass.
 */

let buf = Buffer.allocUnsafe(4096);
let pos = 0;

function ensure(n: number): void {
  if (pos + n <= buf.length) return;
  const bigger = Buffer.allocUnsafe(Math.max(buf.length * 2, pos + n));
  buf.copy(bigger, 0, 0, pos);
  buf = bigger;
}

function writeVarint(v: number): void {
  // v is a non-negative integer below 2^53.
  ensure(10);
  while (v > 0x7f) {
    buf[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  buf[pos++] = v;
}

function writeVarint64(v: bigint): void {
  if (v >= 0n && v <= 0x1fffffffffffffn) {
    writeVarint(Number(v));
    return;
  }
  let u = BigInt.asUintN(64, v); // negative int64: ten-byte two's complement, as protobuf says
  ensure(10);
  while (u > 0x7fn) {
    buf[pos++] = Number(u & 0x7fn) | 0x80;
    u >>= 7n;
  }
  buf[pos++] = Number(u);
}

function writeInt32(v: number): void {
  if (v >= 0) writeVarint(v);
  else writeVarint64(BigInt(v)); // negative int32 is sign-extended to 64 bits
}

function writeTag(field: number, wireType: number): void {
  writeVarint((field << 3) | wireType);
}

function writeString(field: number, s: string): void {
  writeTag(field, 2);
  const max = s.length * 3;
  ensure(max + 5);
  if (max < 0x80) {
    const at = pos++;
    const n = buf.write(s, pos, 'utf8');
    buf[at] = n;
    pos += n;
  } else {
    const n = Buffer.byteLength(s, 'utf8');
    writeVarint(n);
    pos += buf.write(s, pos, 'utf8');
  }
}

/** Writes field `field` as a sub-message written by `body`; its length prefix is fixed up after. */
function writeMessage(field: number, body: () => void): void {
  writeTag(field, 2);
  ensure(1);
  const at = pos++;
  body();
  const n = pos - at - 1;
  if (n < 0x80) {
    buf[at] = n;
    return;
  }
  // Longer than one length byte: move the body up to make room for the varint.
  const lenBytes = n < 0x4000 ? 2 : n < 0x200000 ? 3 : n < 0x10000000 ? 4 : 5;
  ensure(lenBytes - 1);
  buf.copy(buf, at + lenBytes, at + 1, pos);
  const end = pos + lenBytes - 1;
  pos = at;
  writeVarint(n);
  pos = end;
}

function writeBytes(field: number, bytes: Uint8Array): void {
  writeTag(field, 2);
  writeVarint(bytes.length);
  ensure(bytes.length);
  buf.set(bytes, pos);
  pos += bytes.length;
}

function writeInt64Field(field: number, v: bigint): void {
  if (v === 0n) return;
  writeTag(field, 0);
  writeVarint64(v);
}

function writeInt32Field(field: number, v: number): void {
  if (v === 0) return;
  writeTag(field, 0);
  writeInt32(v);
}

function writeBoolField(field: number, v: boolean): void {
  if (!v) return;
  writeTag(field, 0);
  ensure(1);
  buf[pos++] = 1;
}

function writeStringField(field: number, v: string): void {
  if (v.length > 0) writeString(field, v);
}

function take(): Buffer {
  const out = Buffer.allocUnsafe(pos);
  buf.copy(out, 0, 0, pos);
  pos = 0;
  return out;
}

function writeTask(t: Task): void {
  writeInt64Field(1, t.id);
  const shard = t.shard;
  if (shard !== undefined)
    writeMessage(2, () => {
      writeStringField(1, shard.name);
      writeInt64Field(2, shard.start);
      writeInt64Field(3, shard.end);
    });
  writeInt32Field(3, t.type);
  writeInt64Field(4, t.modelVersion);
  for (const key of Object.keys(t.extendedConfig)) {
    const value = t.extendedConfig[key] ?? '';
    writeMessage(5, () => {
      writeString(1, key);
      writeString(2, value);
    });
  }
  writeInt32Field(6, t.epoch);
  writeInt32Field(7, t.leaseMs);
}

function writeRequest(r: TaskStreamRequest): void {
  if (r.callId !== 0) {
    writeTag(1, 0);
    writeVarint(r.callId);
  }
  const c = r.call;
  if (c.case === 'getTask') writeMessage(2, () => writeStringField(1, c.value.workerId));
  else if (c.case === 'reportTaskResult')
    writeMessage(3, () => {
      const v = c.value;
      writeStringField(1, v.workerId);
      writeInt64Field(2, v.taskId);
      writeInt64Field(3, v.recordsDone);
      writeStringField(4, v.error);
    });
  else if (c.case === 'heartbeat')
    writeMessage(4, () => {
      writeStringField(1, c.value.workerId);
      // Stats ride on a heartbeat every second or so: the reflective encoder is cheap enough there.
      if (c.value.stats !== undefined) writeBytes(2, toBinary(WorkerStatsSchema, c.value.stats));
    });
}

function writeResponse(r: TaskStreamResponse): void {
  if (r.callId !== 0) {
    writeTag(1, 0);
    writeVarint(r.callId);
  }
  const c = r.result;
  if (c.case === 'getTask')
    writeMessage(2, () => {
      const v = c.value;
      const task = v.task;
      if (task !== undefined) writeMessage(1, () => writeTask(task));
      writeBoolField(2, v.jobFinished);
      writeStringField(3, v.jobError);
    });
  else if (c.case === 'reportTaskResult') writeMessage(3, () => writeBoolField(1, c.value.accepted));
  else if (c.case === 'heartbeat')
    writeMessage(4, () => {
      writeBoolField(1, c.value.shouldStop);
      writeInt64Field(2, c.value.modelVersion);
    });
  else if (c.case === 'error')
    writeMessage(5, () => {
      writeInt32Field(1, c.value.code);
      writeStringField(2, c.value.details);
    });
}

/** Encodes a TaskStreamRequest (same bytes a protobuf-es toBinary would give, without unknown fields). */
export function encodeTaskStreamRequest(message: TaskStreamRequest): Buffer {
  pos = 0;
  writeRequest(message);
  return take();
}

/** Encodes a TaskStreamResponse. */
export function encodeTaskStreamResponse(message: TaskStreamResponse): Buffer {
  pos = 0;
  writeResponse(message);
  return take();
}

/** Encodes a TaskBatchStreamRequest. */
export function encodeTaskBatchStreamRequest(message: TaskBatchStreamRequest): Buffer {
  pos = 0;
  for (const call of message.calls) writeMessage(1, () => writeRequest(call));
  return take();
}

/** Encodes a TaskBatchStreamResponse. */
export function encodeTaskBatchStreamResponse(message: TaskBatchStreamResponse): Buffer {
  pos = 0;
  for (const result of message.results) writeMessage(1, () => writeResponse(result));
  return take();
}
