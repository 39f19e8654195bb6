import { create, fromBinary, type MessageInitShape, toBinary } from '@bufbuild/protobuf';
import { describe, expect, it } from 'vitest';
import {
  CallErrorSchema,
  GetTaskRequestSchema,
  GetTaskResponseSchema,
  HeartbeatRequestSchema,
  HeartbeatResponseSchema,
  ReportTaskResultRequestSchema,
  ReportTaskResultResponseSchema,
  ShardSchema,
  TaskBatchStreamRequestSchema,
  TaskBatchStreamResponseSchema,
  TaskSchema,
  TaskStreamRequestSchema,
  TaskStreamResponseSchema,
  TaskType,
} from '../src/generated/edl/v1/master_pb.js';
import {
  decodeTaskBatchStreamRequest,
  decodeTaskBatchStreamResponse,
  decodeTaskStreamRequest,
  decodeTaskStreamResponse,
  encodeTaskBatchStreamRequest,
  encodeTaskBatchStreamResponse,
  encodeTaskStreamRequest,
  encodeTaskStreamResponse,
} from '../src/task-stream-codec.js';

const long = 'é'.repeat(9_000); // 18,000 bytes: a three-byte length prefix
const requests: MessageInitShape<typeof TaskStreamRequestSchema>[] = [
  {},
  { callId: 1, call: { case: 'getTask', value: { workerId: 'worker-0' } } },
  { callId: 0xffffffff, call: { case: 'getTask', value: { workerId: '' } } },
  { callId: 7, call: { case: 'heartbeat', value: { workerId: 'wörker-∑-😀' } } },
  {
    callId: 8,
    call: {
      case: 'heartbeat',
      value: {
        workerId: 'worker-1',
        stats: {
          backend: 'cpu',
          steps: 12n,
          trainingRecords: 384n,
          lastLoss: 0.25,
          meanLoss: 0.5,
          lossSteps: 3n,
          elapsedSeconds: 1.5,
          timerSeconds: { compute_loss: 0.75, get_task: 0.01 },
        },
      },
    },
  },
  {
    callId: 300,
    call: {
      case: 'reportTaskResult',
      value: { workerId: 'w', taskId: 2n ** 53n - 1n, recordsDone: 128n, error: 'x'.repeat(200) },
    },
  },
  { callId: 2, call: { case: 'reportTaskResult', value: { workerId: 'w', taskId: -5n, error: long } } },
  { callId: 3, call: { case: 'reportTaskResult', value: { workerId: 'w', taskId: 2n ** 62n } } },
];
const responses: MessageInitShape<typeof TaskStreamResponseSchema>[] = [
  {},
  { callId: 1, result: { case: 'getTask', value: { jobFinished: true, jobError: 'task 3 failed 3 times' } } },
  {
    callId: 2,
    result: {
      case: 'getTask',
      value: {
        task: {
          id: 12n,
          shard: { name: 'data/part-0001.rio', start: 1_000_000n, end: 1_000_512n },
          type: TaskType.EVALUATION,
          modelVersion: 42n,
          extendedConfig: { a: '1', ünïcode: long, '': '' },
          epoch: 3,
          leaseMs: 30_000,
        },
      },
    },
  },
  { callId: 3, result: { case: 'getTask', value: { task: { type: TaskType.WAIT } } } },
  { callId: 4, result: { case: 'reportTaskResult', value: { accepted: true } } },
  { callId: 5, result: { case: 'heartbeat', value: { shouldStop: true, modelVersion: -1n } } },
  { callId: 6, result: { case: 'error', value: { code: 3, details: 'Expected ... but received' } } },
  { callId: 7, result: { case: 'error', value: { code: -2, details: '' } } },
];

describe('TaskStream codec (hand-written) against the generated protobuf-es code', () => {
  it('encodes requests and responses to the bytes protobuf-es writes', () => {
    for (const init of requests) {
      const message = create(TaskStreamRequestSchema, init);
      expect(encodeTaskStreamRequest(message)).toEqual(
        Buffer.from(toBinary(TaskStreamRequestSchema, message)),
      );
    }
    for (const init of responses) {
      const message = create(TaskStreamResponseSchema, init);
      // Map entries may be ordered differently: compare what protobuf-es decodes.
      expect(fromBinary(TaskStreamResponseSchema, encodeTaskStreamResponse(message))).toEqual(message);
      if (
        Object.keys(init.result?.case === 'getTask' ? (init.result.value.task?.extendedConfig ?? {}) : {})
          .length === 0
      )
        expect(encodeTaskStreamResponse(message)).toEqual(
          Buffer.from(toBinary(TaskStreamResponseSchema, message)),
        );
    }
  });

  it('decodes what protobuf-es writes into the same messages', () => {
    for (const init of requests) {
      const message = create(TaskStreamRequestSchema, init);
      expect(decodeTaskStreamRequest(toBinary(TaskStreamRequestSchema, message))).toEqual(message);
    }
    for (const init of responses) {
      const message = create(TaskStreamResponseSchema, init);
      expect(decodeTaskStreamResponse(toBinary(TaskStreamResponseSchema, message))).toEqual(message);
    }
  });

  it('round-trips batches', () => {
    const batch = create(TaskBatchStreamRequestSchema, {
      calls: requests.map((r) => create(TaskStreamRequestSchema, r)),
    });
    const bytes = encodeTaskBatchStreamRequest(batch);
    expect(bytes).toEqual(Buffer.from(toBinary(TaskBatchStreamRequestSchema, batch)));
    expect(decodeTaskBatchStreamRequest(bytes)).toEqual(batch);
    const results = create(TaskBatchStreamResponseSchema, {
      results: responses.map((r) => create(TaskStreamResponseSchema, r)),
    });
    expect(fromBinary(TaskBatchStreamResponseSchema, encodeTaskBatchStreamResponse(results))).toEqual(
      results,
    );
    expect(decodeTaskBatchStreamResponse(toBinary(TaskBatchStreamResponseSchema, results))).toEqual(results);
    expect(decodeTaskBatchStreamRequest(new Uint8Array(0))).toEqual(create(TaskBatchStreamRequestSchema, {}));
  });

  it('leaves unknown fields and merges to the generated decoder', () => {
    const message = create(TaskStreamRequestSchema, requests[1]);
    const known = toBinary(TaskStreamRequestSchema, message);
    const withUnknown = Buffer.concat([known, Buffer.from([(15 << 3) | 0, 99])]);
    expect(decodeTaskStreamRequest(withUnknown)).toEqual(fromBinary(TaskStreamRequestSchema, withUnknown));
    expect(decodeTaskStreamRequest(withUnknown).$unknown).toHaveLength(1);
    // The same oneof member twice: protobuf merges the two.
    const twice = Buffer.concat([known, known.subarray(known.indexOf(0x12))]);
    expect(decodeTaskStreamRequest(twice)).toEqual(fromBinary(TaskStreamRequestSchema, twice));
  });

  it('rejects truncated input as the generated decoder does', () => {
    const bytes = encodeTaskStreamResponse(create(TaskStreamResponseSchema, responses[2]));
    for (const cut of [1, 5, bytes.length - 1]) {
      const truncated = bytes.subarray(0, cut);
      expect(() => fromBinary(TaskStreamResponseSchema, truncated)).toThrow();
      expect(() => decodeTaskStreamResponse(truncated)).toThrow();
    }
  });

  it('knows every field of the messages it encodes (a new field in master.proto must be added to it)', () => {
    // The encoder writes the fields it knows: one it does not know would be dropped silently.
    const known: [{ typeName: string; fields: { number: number; name: string }[] }, string[]][] = [
      [TaskStreamRequestSchema, ['call_id', 'get_task', 'report_task_result', 'heartbeat']],
      [TaskStreamResponseSchema, ['call_id', 'get_task', 'report_task_result', 'heartbeat', 'error']],
      [TaskBatchStreamRequestSchema, ['calls']],
      [TaskBatchStreamResponseSchema, ['results']],
      [GetTaskRequestSchema, ['worker_id']],
      [HeartbeatRequestSchema, ['worker_id', 'stats']],
      [ReportTaskResultRequestSchema, ['worker_id', 'task_id', 'records_done', 'error']],
      [GetTaskResponseSchema, ['task', 'job_finished', 'job_error']],
      [TaskSchema, ['id', 'shard', 'type', 'model_version', 'extended_config', 'epoch', 'lease_ms']],
      [ShardSchema, ['name', 'start', 'end']],
      [ReportTaskResultResponseSchema, ['accepted']],
      [HeartbeatResponseSchema, ['should_stop', 'model_version']],
      [CallErrorSchema, ['code', 'details']],
    ];
    for (const [schema, names] of known) {
      const fields = schema.fields.map((f) => `${f.number}:${f.name}`);
      expect(fields, `${schema.typeName}: update src/task-stream-codec.ts`).toEqual(
        names.map((name, i) => `${i + 1}:${name}`),
      );
    }
  });
});
