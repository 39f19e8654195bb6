import { type DescMessage, fromBinary, type MessageShape } from '@bufbuild/protobuf';
import {
  type CallError,
  type GetTaskRequest,
  type GetTaskResponse,
  type HeartbeatRequest,
  type HeartbeatResponse,
  type ReportTaskResultRequest,
  type ReportTaskResultResponse,
  type Task,
  type TaskBatchStreamRequest,
  TaskBatchStreamRequestSchema,
  type TaskBatchStreamResponse,
  TaskBatchStreamResponseSchema,
  type TaskStreamRequest,
  TaskStreamRequestSchema,
  type TaskStreamResponse,
  TaskStreamResponseSchema,
} from './generated/edl/v1/master_pb.js';

/*
 * The decoding half of the task-stream codec (see task-stream-codec.ts): a cursor over the input
 * that reads the fields it knows and throws `notFast` at anything else, which hands the whole input
 * to the generated decoder.
 */

/** Thrown inside the fast decoder for any input it leaves to the generated code. */
class NotFastPath extends Error {}
const notFast = new NotFastPath('not on the fast path');

let src: Buffer = Buffer.alloc(0);
let at = 0;

function readVarint(): number {
  // Up to 2^53 exactly; anything longer leaves the fast path.
  let result = 0;
  let factor = 1;
  for (let i = 0; i < 8; i++) {
    if (at >= src.length) throw notFast;
    const b = src[at++] as number;
    result += (b & 0x7f) * factor;
    if (b < 0x80) return result;
    factor *= 0x80;
  }
  throw notFast;
}

function readInt64(): bigint {
  const start = at;
  const n = readVarint();
  if (n <= Number.MAX_SAFE_INTEGER) return BigInt(n);
  at = start;
  throw notFast;
}

function readInt32(): number {
  // Negative int32 values take ten bytes: leave them to the generated code.
  const n = readVarint();
  if (n > 0x7fffffff) throw notFast;
  return n;
}

function readBool(): boolean {
  const n = readVarint();
  return n !== 0;
}

function readString(): string {
  const n = readVarint();
  const end = at + n;
  if (end > src.length) throw notFast;
  const s = src.toString('utf8', at, end);
  at = end;
  return s;
}

/** Reads the body of a length-delimited field, calling `field(number, wireType)` per field. */
function readMessage(field: (number: number, wireType: number) => void): void {
  const n = readVarint();
  const end = at + n;
  if (end > src.length) throw notFast;
  readFields(end, field);
}

function readFields(end: number, field: (number: number, wireType: number) => void): void {
  while (at < end) {
    const tag = readVarint();
    field(tag >>> 3, tag & 7);
  }
  if (at !== end) throw notFast;
}

function expect(wireType: number, wanted: number): void {
  if (wireType !== wanted) throw notFast;
}

function readWorkerIdOnly<T>(make: (workerId: string) => T): T {
  let workerId = '';
  readMessage((n, w) => {
    if (n !== 1) throw notFast;
    expect(w, 2);
    workerId = readString();
  });
  return make(workerId);
}

/** Reads field 1 of a request or response, its uint32 call id. */
function readCallId(wireType: number): number {
  expect(wireType, 0);
  const callId = readVarint();
  if (callId > 0xffffffff) throw notFast;
  return callId;
}

function readRequestFields(end: number): TaskStreamRequest {
  let callId = 0;
  let call: TaskStreamRequest['call'] = { case: undefined };
  readFields(end, (n, w) => {
    if (n === 1) {
      callId = readCallId(w);
      return;
    }
    expect(w, 2);
    if (call.case !== undefined) throw notFast; // a second oneof member: merging rules, not ours
    if (n === 2)
      call = {
        case: 'getTask',
        value: readWorkerIdOnly(
          (workerId): GetTaskRequest => ({ $typeName: 'edl.v1.GetTaskRequest', workerId }),
        ),
      };
    else if (n === 3) {
      const v: ReportTaskResultRequest = {
        $typeName: 'edl.v1.ReportTaskResultRequest',
        workerId: '',
        taskId: 0n,
        recordsDone: 0n,
        error: '',
      };
      readMessage((m, mw) => {
        if (m === 1 && mw === 2) v.workerId = readString();
        else if (m === 2 && mw === 0) v.taskId = readInt64();
        else if (m === 3 && mw === 0) v.recordsDone = readInt64();
        else if (m === 4 && mw === 2) v.error = readString();
        else throw notFast;
      });
      call = { case: 'reportTaskResult', value: v };
    } else if (n === 4)
      call = {
        case: 'heartbeat',
        value: readWorkerIdOnly(
          (workerId): HeartbeatRequest => ({ $typeName: 'edl.v1.HeartbeatRequest', workerId }),
        ),
      };
    else throw notFast;
  });
  return { $typeName: 'edl.v1.TaskStreamRequest', callId, call };
}

function readTask(): Task {
  const t: Task = {
    $typeName: 'edl.v1.Task',
    id: 0n,
    shard: undefined,
    type: 0,
    modelVersion: 0n,
    extendedConfig: {},
    epoch: 0,
    leaseMs: 0,
  };
  readMessage((n, w) => {
    if (n === 1 && w === 0) t.id = readInt64();
    else if (n === 2 && w === 2 && t.shard === undefined) {
      const shard = { $typeName: 'edl.v1.Shard' as const, name: '', start: 0n, end: 0n };
      readMessage((m, mw) => {
        if (m === 1 && mw === 2) shard.name = readString();
        else if (m === 2 && mw === 0) shard.start = readInt64();
        else if (m === 3 && mw === 0) shard.end = readInt64();
        else throw notFast;
      });
      t.shard = shard;
    } else if (n === 3 && w === 0) t.type = readInt32();
    else if (n === 4 && w === 0) t.modelVersion = readInt64();
    else if (n === 5 && w === 2) {
      let key = '';
      let value = '';
      readMessage((m, mw) => {
        if (m === 1 && mw === 2) key = readString();
        else if (m === 2 && mw === 2) value = readString();
        else throw notFast;
      });
      t.extendedConfig[key] = value;
    } else if (n === 6 && w === 0) t.epoch = readInt32();
    else if (n === 7 && w === 0) t.leaseMs = readInt32();
    else throw notFast;
  });
  return t;
}

function readResponseFields(end: number): TaskStreamResponse {
  let callId = 0;
  let result: TaskStreamResponse['result'] = { case: undefined };
  readFields(end, (n, w) => {
    if (n === 1) {
      callId = readCallId(w);
      return;
    }
    expect(w, 2);
    if (result.case !== undefined) throw notFast;
    if (n === 2) {
      const v: GetTaskResponse = {
        $typeName: 'edl.v1.GetTaskResponse',
        task: undefined,
        jobFinished: false,
        jobError: '',
      };
      readMessage((m, mw) => {
        if (m === 1 && mw === 2 && v.task === undefined) v.task = readTask();
        else if (m === 2 && mw === 0) v.jobFinished = readBool();
        else if (m === 3 && mw === 2) v.jobError = readString();
        else throw notFast;
      });
      result = { case: 'getTask', value: v };
    } else if (n === 3) {
      const v: ReportTaskResultResponse = { $typeName: 'edl.v1.ReportTaskResultResponse', accepted: false };
      readMessage((m, mw) => {
        if (m === 1 && mw === 0) v.accepted = readBool();
        else throw notFast;
      });
      result = { case: 'reportTaskResult', value: v };
    } else if (n === 4) {
      const v: HeartbeatResponse = {
        $typeName: 'edl.v1.HeartbeatResponse',
        shouldStop: false,
        modelVersion: 0n,
      };
      readMessage((m, mw) => {
        if (m === 1 && mw === 0) v.shouldStop = readBool();
        else if (m === 2 && mw === 0) v.modelVersion = readInt64();
        else throw notFast;
      });
      result = { case: 'heartbeat', value: v };
    } else if (n === 5) {
      const v: CallError = { $typeName: 'edl.v1.CallError', code: 0, details: '' };
      readMessage((m, mw) => {
        if (m === 1 && mw === 0) v.code = readInt32();
        else if (m === 2 && mw === 2) v.details = readString();
        else throw notFast;
      });
      result = { case: 'error', value: v };
    } else throw notFast;
  });
  return { $typeName: 'edl.v1.TaskStreamResponse', callId, result };
}

function readRepeated<T>(read: (end: number) => T): T[] {
  const out: T[] = [];
  while (at < src.length) {
    const tag = readVarint();
    if (tag !== ((1 << 3) | 2)) throw notFast;
    const n = readVarint();
    const end = at + n;
    if (end > src.length) throw notFast;
    out.push(read(end));
  }
  return out;
}

/**
 * Runs the fast decoder over `bytes`; on input it does not handle, the generated decoder of
 * `schema` (which also throws on bad input).
 */
function decode<Desc extends DescMessage>(
  schema: Desc,
  bytes: Uint8Array,
  fast: () => MessageShape<Desc>,
): MessageShape<Desc> {
  src = Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  at = 0;
  try {
    return fast();
  } catch (error) {
    if (error !== notFast) throw error;
    return fromBinary(schema, bytes);
  } finally {
    src = Buffer.alloc(0);
  }
}

/** Decodes a TaskStreamRequest. */
export function decodeTaskStreamRequest(bytes: Uint8Array): TaskStreamRequest {
  return decode(TaskStreamRequestSchema, bytes, () => readRequestFields(src.length));
}

/** Decodes a TaskStreamResponse. */
export function decodeTaskStreamResponse(bytes: Uint8Array): TaskStreamResponse {
  return decode(TaskStreamResponseSchema, bytes, () => readResponseFields(src.length));
}

/** Decodes a TaskBatchStreamRequest. */
export function decodeTaskBatchStreamRequest(bytes: Uint8Array): TaskBatchStreamRequest {
  return decode(TaskBatchStreamRequestSchema, bytes, () => ({
    $typeName: 'edl.v1.TaskBatchStreamRequest' as const,
    calls: readRepeated(readRequestFields),
  }));
}

/** Decodes a TaskBatchStreamResponse. */
export function decodeTaskBatchStreamResponse(bytes: Uint8Array): TaskBatchStreamResponse {
  return decode(TaskBatchStreamResponseSchema, bytes, () => ({
    $typeName: 'edl.v1.TaskBatchStreamResponse' as const,
    results: readRepeated(readResponseFields),
  }));
}
