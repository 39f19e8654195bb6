import { create } from '@bufbuild/protobuf';
import {
  Server,
  ServerCredentials,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  status,
} from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  fromTensorMessage,
  type GetTaskRequest,
  GetTaskResponseSchema,
  GradientStatus,
  JOB_TOKEN_METADATA_KEY,
  MasterClient,
  MasterRpcError,
  masterServiceDefinition,
  PingResponseSchema,
  type ReportGradientRequest,
  ReportGradientResponseSchema,
  type TaskBatchStreamRequest,
  type TaskBatchStreamResponse,
  TaskBatchStreamResponseSchema,
  type TaskStreamRequest,
  type TaskStreamResponse,
  TaskStreamResponseSchema,
  TaskType,
} from '../src/index.js';

/** A real gRPC server with a hand-written handful of handlers: enough to exercise the client. */
describe('MasterClient over real gRPC', () => {
  const server = new Server();
  let address = '';
  let lastGradient: ReportGradientRequest | undefined;
  /** Number of calls in each TaskBatchStreamRequest received. */
  const batchSizes: number[] = [];
  /** The reply to an accepted gradient report of a range ending at `taskProgress`. */
  const accepted = (taskProgress: bigint) =>
    create(ReportGradientResponseSchema, { status: GradientStatus.ACCEPTED, modelVersion: 5n, taskProgress });
  /** Answers a stream call with a WAIT-free heartbeat reply; a worker named 'silent' gets no answer. */
  const answer = (request: TaskStreamRequest): TaskStreamResponse | undefined => {
    const c = request.call;
    if (c.case !== 'heartbeat' || c.value.workerId === 'silent') return undefined;
    return create(TaskStreamResponseSchema, {
      callId: request.callId,
      result: { case: 'heartbeat', value: { shouldStop: c.value.workerId === 'stop', modelVersion: 9n } },
    });
  };

  beforeAll(async () => {
    const unimplemented = (_call: unknown, callback: sendUnaryData<never>) =>
      callback({ code: status.UNIMPLEMENTED, details: 'not in this test' });
    const handlers: Record<string, unknown> = {};
    for (const name of Object.keys(masterServiceDefinition)) handlers[name] = unimplemented;
    handlers.getTask = (call: ServerUnaryCall<GetTaskRequest, unknown>, callback: sendUnaryData<unknown>) => {
      if (call.metadata.get(JOB_TOKEN_METADATA_KEY)[0] !== 'secret') {
        callback({ code: status.UNAUTHENTICATED, details: 'bad job token' });
        return;
      }
      callback(
        null,
        create(GetTaskResponseSchema, {
          task: {
            id: 3n,
            type: TaskType.TRAINING,
            shard: { name: call.request.workerId, start: 10n, end: 20n },
          },
        }),
      );
    };
    handlers.reportGradient = (
      call: ServerUnaryCall<ReportGradientRequest, unknown>,
      callback: sendUnaryData<unknown>,
    ) => {
      lastGradient = call.request;
      callback(null, accepted(call.request.rangeEnd));
    };
    // The GradientStream answers as reportGradient does, in order; a report of 'silent' gets none.
    handlers.gradientStream = (call: ServerDuplexStream<ReportGradientRequest, unknown>) => {
      call.on('data', (request: ReportGradientRequest) => {
        if (request.workerId === 'silent') return;
        lastGradient = request;
        call.write(accepted(request.rangeEnd));
      });
      call.on('end', () => call.end());
    };
    handlers.taskStream = (call: ServerDuplexStream<TaskStreamRequest, TaskStreamResponse>) => {
      call.on('data', (request: TaskStreamRequest) => {
        const response = answer(request);
        if (response) call.write(response);
      });
      call.on('end', () => call.end());
    };
    handlers.taskBatchStream = (
      call: ServerDuplexStream<TaskBatchStreamRequest, TaskBatchStreamResponse>,
    ) => {
      call.on('data', (batch: TaskBatchStreamRequest) => {
        batchSizes.push(batch.calls.length);
        const results = batch.calls.map(answer).filter((r) => r !== undefined);
        call.write(create(TaskBatchStreamResponseSchema, { results }));
      });
      call.on('end', () => call.end());
    };
    handlers.ping = (_call: unknown, callback: sendUnaryData<unknown>) =>
      callback(null, create(PingResponseSchema, {}));
    server.addService(masterServiceDefinition, handlers as never);
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, p) =>
        error ? reject(error) : resolve(p),
      ),
    );
    address = `127.0.0.1:${port}`;
  });
  afterAll(() => server.forceShutdown());

  it('sends the token and decodes the task into numbers', async () => {
    const client = await MasterClient.connect(address, 'secret');
    const result = await client.getTask('worker-7');
    expect(result.jobFinished).toBe(false);
    expect(result.task).toMatchObject({
      id: 3,
      type: TaskType.TRAINING,
      shardName: 'worker-7',
      start: 10,
      end: 20,
    });
    client.close();
  });

  it('maps a gRPC status to a MasterRpcError with a stable code', async () => {
    const client = new MasterClient(address, 'wrong');
    const error = await client.getTask('w').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MasterRpcError);
    expect(error).toMatchObject({ code: 'UNAUTHENTICATED', method: 'getTask', retryable: false });
    expect((error as Error).message).toBe('getTask failed with UNAUTHENTICATED: bad job token');
    const unimplemented = await client.heartbeat('w').catch((e: unknown) => e);
    expect(unimplemented).toMatchObject({ code: 'UNIMPLEMENTED' });
    client.close();
  });

  it('carries gradients as float32 bytes with their range', async () => {
    const client = new MasterClient(address, 'secret');
    const result = await client.reportGradient({
      workerId: 'w',
      taskId: 3,
      rangeStart: 10,
      rangeEnd: 14,
      modelVersion: 4,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array([0.5, -1]) }],
    });
    expect(result).toEqual({ status: GradientStatus.ACCEPTED, modelVersion: 5, taskProgress: 14 });
    expect(lastGradient?.rangeStart).toBe(10n);
    expect(Array.from(fromTensorMessage(lastGradient!.gradients[0]!).values)).toEqual([0.5, -1]);
    client.close();
  });

  it('reports an unreachable master as a retryable UNAVAILABLE error', async () => {
    const client = new MasterClient('127.0.0.1:1', 'secret', { deadlineMs: 2_000 });
    const error = await client.ping().catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
    client.close();
  });

  it('sends the calls made in one event-loop turn while others are in flight as one batch', async () => {
    const client = await MasterClient.connect(address, 'secret', { transport: 'batch' });
    batchSizes.length = 0;
    const replies = await Promise.all(['a', 'b', 'stop', 'c'].map((w) => client.heartbeat(w)));
    expect(replies.map((r) => r.shouldStop)).toEqual([false, false, true, false]);
    expect(replies[0]?.modelVersion).toBe(9);
    // The first call had nothing to wait for and went at once; the three made meanwhile, together.
    expect(batchSizes).toEqual([1, 3]);
    await client.heartbeat('d');
    expect(batchSizes).toEqual([1, 3, 1]);
    client.close();
  });

  it('carries gradients on a GradientStream, and fails a report never answered with DEADLINE_EXCEEDED', async () => {
    const client = await MasterClient.connect(address, 'secret', {
      gradientTransport: 'stream',
      deadlineMs: 300,
    });
    const report = (workerId: string, rangeEnd: number) => ({
      workerId,
      taskId: 3,
      rangeStart: 10,
      rangeEnd,
      modelVersion: 4,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array([0.5, -1]) }],
    });
    expect(await client.reportGradient(report('w', 14))).toEqual({
      status: GradientStatus.ACCEPTED,
      modelVersion: 5,
      taskProgress: 14,
    });
    expect(Array.from(fromTensorMessage(lastGradient!.gradients[0]!).values)).toEqual([0.5, -1]);
    const t0 = performance.now();
    const error = await client.reportGradient(report('silent', 16)).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(MasterRpcError);
    expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', method: 'reportGradient', retryable: true });
    expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
    // The stream that lost its order was dropped: the next report goes on a new one.
    expect((await client.reportGradient(report('w', 18))).taskProgress).toBe(18);
    client.close();
    await expect(client.reportGradient(report('w', 20))).rejects.toMatchObject({ code: 'CANCELLED' });
  });

  it('falls back to unary reports when the master has no GradientStream (a master from before it)', async () => {
    const old = new Server();
    let unaryReports = 0;
    // Only what that master had: no gradientStream handler, so grpc-js answers it UNIMPLEMENTED.
    old.addService(masterServiceDefinition, {
      ping: (_call: unknown, callback: sendUnaryData<unknown>) =>
        callback(null, create(PingResponseSchema, {})),
      reportGradient: (
        call: ServerUnaryCall<ReportGradientRequest, unknown>,
        callback: sendUnaryData<unknown>,
      ) => {
        unaryReports++;
        callback(null, accepted(call.request.rangeEnd));
      },
    } as never);
    const port = await new Promise<number>((resolve, reject) =>
      old.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (error, p) =>
        error ? reject(error) : resolve(p),
      ),
    );
    const client = await MasterClient.connect(`127.0.0.1:${port}`, 'secret', { gradientTransport: 'stream' });
    const report = (rangeEnd: number) => ({
      workerId: 'w',
      taskId: 3,
      rangeStart: 10,
      rangeEnd,
      modelVersion: 4,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array([0.5, -1]) }],
    });
    // Two in flight when the stream is refused (a worker pushing ahead): both arrive, as unary calls.
    const replies = await Promise.all([client.reportGradient(report(12)), client.reportGradient(report(14))]);
    expect(replies.map((r) => r.taskProgress)).toEqual([12, 14]);
    expect((await client.reportGradient(report(16))).taskProgress).toBe(16);
    expect(unaryReports).toBe(3);
    client.close();
    old.forceShutdown();
  });

  for (const transport of ['stream', 'batch'] as const) {
    it(`fails a ${transport} call the master never answers with DEADLINE_EXCEEDED, and only that call`, async () => {
      const client = await MasterClient.connect(address, 'secret', { transport, deadlineMs: 300 });
      const t0 = performance.now();
      const silent = client.heartbeat('silent').catch((e: unknown) => e);
      const answered = await client.heartbeat('w');
      expect(answered.modelVersion).toBe(9);
      const error = await silent;
      expect(error).toBeInstanceOf(MasterRpcError);
      expect(error).toMatchObject({ code: 'DEADLINE_EXCEEDED', method: 'heartbeat', retryable: true });
      expect(performance.now() - t0).toBeGreaterThanOrEqual(290);
      // A later call gets its own full deadline, not what is left of the first one's.
      const second = client.heartbeat('silent').catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 150));
      expect(await client.heartbeat('w')).toMatchObject({ modelVersion: 9 });
      expect(await second).toMatchObject({ code: 'DEADLINE_EXCEEDED' });
      client.close();
    });
  }
});
