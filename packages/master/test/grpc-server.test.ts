import { GradientStatus, MasterClient, TaskType } from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MasterServer, serveMaster } from '../src/grpc-server.js';
import { silentLogger } from '../src/logger.js';
import { Master } from '../src/master.js';

const TOKEN = 'job-token-for-tests';

describe('gRPC server', () => {
  let master: Master;
  let server: MasterServer;

  beforeAll(async () => {
    master = new Master({
      jobType: 'training',
      trainingShards: [{ name: 's', start: 0, count: 80 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 2,
      // Every transport's test fails the same first task once on purpose.
      maxTaskFailures: 10,
      logger: silentLogger,
      // Sync: a gradient of an older version is answered STALE (async would apply it).
      parameterStore: { mode: 'sync', optimizer: { type: 'sgd', learningRate: 0.5 } },
    });
    server = await serveMaster(master, { token: TOKEN, maxMessageBytes: 64 * 1024 });
  });
  afterAll(() => server.shutdown(1_000));

  it('listens on 127.0.0.1 by default', () => {
    expect(server.address).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  for (const transport of ['unary', 'stream', 'batch'] as const) {
    it(`serves getTask / reportTaskResult / heartbeat over ${transport} calls`, async () => {
      const client = await MasterClient.connect(server.address, TOKEN, { transport });
      const { task } = await client.getTask(`w-${transport}`);
      expect(task).toMatchObject({ type: TaskType.TRAINING, shardName: 's', end: task!.start + 20 });
      expect(await client.heartbeat(`w-${transport}`)).toEqual({ shouldStop: false, modelVersion: 0 });
      // Reported failed: the records go back to todo, nothing is lost.
      const failed = { workerId: `w-${transport}`, taskId: task!.id, error: 'simulated failure' };
      expect(master.taskManager.tasksOf(`w-${transport}`)).toEqual([task!.id]);
      expect(await client.reportTaskResult(failed)).toEqual({
        accepted: true,
      });
      expect(master.taskManager.tasksOf(`w-${transport}`)).toEqual([]);
      const error = await client.reportTaskResult({ workerId: '', taskId: 1 }).catch((e: unknown) => e);
      expect(error).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message:
          'reportTaskResult failed with INVALID_ARGUMENT: Expected a non-empty string for workerId but received ""',
      });
      client.close();
    });

    it(`answers UNAUTHENTICATED to ${transport} calls without the right token`, async () => {
      const client = new MasterClient(server.address, 'wrong', { transport });
      await expect(client.getTask('w')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      await expect(client.heartbeat('w')).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
      client.close();
    });
  }

  it('initialises the model once, applies gradients and reports duplicates', async () => {
    const client = await MasterClient.connect(server.address, TOKEN);
    expect((await client.getModel('w')).initialized).toBe(false);
    const variables = [{ name: 'w', shape: [2], values: new Float32Array([1, 1]) }];
    expect(await client.reportVariables('w', variables)).toEqual({ accepted: true, version: 0 });
    expect((await client.reportVariables('x', variables)).accepted).toBe(false);
    const { task } = await client.getTask('w');
    const report = {
      workerId: 'w',
      taskId: task!.id,
      rangeStart: task!.start,
      rangeEnd: task!.start + 10,
      modelVersion: 0,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array([2, -2]) }],
    };
    expect(await client.reportGradient(report)).toEqual({
      status: GradientStatus.ACCEPTED,
      modelVersion: 1,
      taskProgress: task!.start + 10,
    });
    expect((await client.reportGradient({ ...report, modelVersion: 1 })).status).toBe(
      GradientStatus.ALREADY_APPLIED,
    );
    const next = { ...report, rangeStart: report.rangeEnd, rangeEnd: report.rangeEnd + 10 };
    expect((await client.reportGradient(next)).status).toBe(GradientStatus.STALE);
    // A stale answer can carry the model, so that the gradient is recomputed with no pull.
    const stale = await client.reportGradient({ ...next, wantModel: true });
    expect(stale.status).toBe(GradientStatus.STALE);
    expect(stale.variables?.map((v) => [v.name, Array.from(v.values)])).toEqual([['w', [0, 2]]]);
    const model = await client.getModel('w');
    expect(model.version).toBe(1);
    expect(Array.from(model.variables[0]!.values)).toEqual([0, 2]);
    // Pulling the version already held costs no variables.
    expect(await client.getModel('w', -1, 1)).toEqual({
      version: 1,
      initialized: true,
      unchanged: true,
      variables: [],
    });
    await expect(
      client.reportGradient({
        ...next,
        modelVersion: 1,
        gradients: [{ name: 'zz', shape: [1], values: new Float32Array(1) }],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    const accepted = await client.reportGradient({ ...next, modelVersion: 1, wantModel: true });
    expect(accepted.status).toBe(GradientStatus.ACCEPTED);
    expect(accepted.modelVersion).toBe(2);
    expect(Array.from(accepted.variables![0]!.values)).toEqual([-1, 3]);
    client.close();
  });

  it('answers gradient reports on a GradientStream in order, as the unary call would', async () => {
    const fresh = new Master({
      jobType: 'training',
      trainingShards: [{ name: 's', start: 0, count: 80 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      logger: silentLogger,
      parameterStore: { mode: 'sync', optimizer: { type: 'sgd', learningRate: 0.5 } },
    });
    fresh.reportVariables('g', [{ name: 'w', shape: [2], values: new Float32Array([1, 1]) }]);
    const freshServer = await serveMaster(fresh, { token: TOKEN });
    const client = await MasterClient.connect(freshServer.address, TOKEN, { gradientTransport: 'stream' });
    const { task } = await client.getTask('g');
    const range = (i: number) => ({ rangeStart: task!.start + 10 * i, rangeEnd: task!.start + 10 * (i + 1) });
    const report = (i: number, modelVersion: number, values: number[]) => ({
      workerId: 'g',
      taskId: task!.id,
      ...range(i),
      modelVersion,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array(values) }],
      wantModel: true,
    });
    // Two reports in flight at once: each reply carries the model right after its own update.
    const [first, second] = await Promise.all([
      client.reportGradient(report(0, 0, [2, -2])),
      client.reportGradient(report(1, 0, [2, -2])),
    ]);
    expect(first).toMatchObject({ status: GradientStatus.ACCEPTED, modelVersion: 1 });
    expect(Array.from(first.variables![0]!.values)).toEqual([0, 2]);
    expect(second).toMatchObject({ status: GradientStatus.STALE, modelVersion: 1 });
    expect((await client.reportGradient(report(0, 1, [0, 0]))).status).toBe(GradientStatus.ALREADY_APPLIED);
    // A refused report fails alone, with the unary call's status; the next one opens a new stream.
    await expect(
      client.reportGradient({
        ...report(1, 1, [0]),
        gradients: [{ name: 'zz', shape: [1], values: new Float32Array(1) }],
      }),
    ).rejects.toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringContaining("'zz'") });
    const accepted = await client.reportGradient(report(1, 1, [2, -2]));
    expect(accepted).toMatchObject({
      status: GradientStatus.ACCEPTED,
      modelVersion: 2,
      taskProgress: range(1).rangeEnd,
    });
    expect(Array.from(accepted.variables![0]!.values)).toEqual([-1, 3]);
    const wrong = new MasterClient(freshServer.address, 'wrong', { gradientTransport: 'stream' });
    await expect(wrong.reportGradient(report(2, 2, [0, 0]))).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
    });
    wrong.close();
    // A stream still open at shutdown is ended: the report in flight fails as UNAVAILABLE (retried).
    await freshServer.shutdown(1_000);
    await expect(client.reportGradient(report(2, 2, [0, 0]))).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    client.close();
  });

  it('carries the extra ranges of a minibatch that spans tasks', async () => {
    const fresh = new Master({
      jobType: 'training',
      trainingShards: [{ name: 's', start: 0, count: 40 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 2,
      logger: silentLogger,
    });
    fresh.reportVariables('span', [{ name: 'w', shape: [2], values: new Float32Array(2) }]);
    const freshServer = await serveMaster(fresh, { token: TOKEN });
    const client = await MasterClient.connect(freshServer.address, TOKEN);
    const a = (await client.getTask('span')).task!;
    const b = (await client.getTask('span')).task!;
    const { version } = await client.getModel('span');
    const reply = await client.reportGradient({
      workerId: 'span',
      taskId: a.id,
      rangeStart: a.start,
      rangeEnd: a.start + 10,
      modelVersion: version,
      gradients: [{ name: 'w', shape: [2], values: new Float32Array([0, 0]) }],
      moreRanges: [{ taskId: b.id, rangeStart: b.start, rangeEnd: b.start + 10 }],
    });
    expect(reply.status).toBe(GradientStatus.ACCEPTED);
    const progress = new Map(fresh.taskManager.inFlight().map((t) => [t.taskId, t.progress]));
    expect([progress.get(a.id), progress.get(b.id)]).toEqual([a.start + 10, b.start + 10]);
    client.close();
    await freshServer.shutdown(1_000);
  });

  it('answers each call of a batch on its own: one bad call fails alone', async () => {
    const client = await MasterClient.connect(server.address, TOKEN, { transport: 'batch' });
    const [a, bad, b] = await Promise.allSettled([
      client.getTask('batch-a'),
      client.reportTaskResult({ workerId: '', taskId: 1 }),
      client.getTask('batch-b'),
    ]);
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: 'INVALID_ARGUMENT' } });
    const ids = [a, b].map((r) => (r.status === 'fulfilled' ? r.value.task?.id : undefined));
    expect(master.taskManager.tasksOf('batch-a')).toEqual([ids[0]]);
    expect(master.taskManager.tasksOf('batch-b')).toEqual([ids[1]]);
    expect(ids[0]).not.toBe(ids[1]);
    for (const [workerId, taskId] of [
      ['batch-a', ids[0]!],
      ['batch-b', ids[1]!],
    ] as const)
      await client.reportTaskResult({ workerId, taskId, error: 'given back' });
    client.close();
  });

  for (const transport of ['unary', 'stream', 'batch'] as const) {
    it(`refuses ${transport} calls over the size limit`, async () => {
      const client = await MasterClient.connect(server.address, TOKEN, { transport });
      const error = await client
        .reportTaskResult({ workerId: 'w', taskId: 1, error: 'x'.repeat(100_000) })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
      // Many small calls batched together stay under the limit (the client splits batches).
      const replies = await Promise.all(
        Array.from({ length: 600 }, (_, i) => client.heartbeat(`size-${i}-${'y'.repeat(300)}`)),
      );
      expect(replies).toHaveLength(600);
      client.close();
    });
  }

  for (const transport of ['stream', 'batch'] as const) {
    it(`shuts down at once with open ${transport} streams, failing later calls as UNAVAILABLE`, async () => {
      const fresh = new Master({
        jobType: 'training',
        trainingShards: [{ name: 's', start: 0, count: 40 }],
        minibatchSize: 10,
        numMinibatchesPerTask: 2,
        logger: silentLogger,
      });
      const freshServer = await serveMaster(fresh, { token: TOKEN });
      const client = await MasterClient.connect(freshServer.address, TOKEN, { transport });
      const { task } = await client.getTask('w');
      const t0 = performance.now();
      await freshServer.shutdown(10_000);
      expect(performance.now() - t0).toBeLessThan(5_000);
      const error = await client
        .reportTaskResult({ workerId: 'w', taskId: task!.id })
        .catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'UNAVAILABLE', retryable: true });
      // The report never ran: the task is still held, nothing was counted.
      expect(fresh.taskManager.tasksOf('w')).toEqual([task!.id]);
      client.close();
    });
  }

  it('refuses messages over the size limit', async () => {
    const client = await MasterClient.connect(server.address, TOKEN);
    const big = [{ name: 'big', shape: [100_000], values: new Float32Array(100_000) }];
    await expect(client.reportVariables('w', big)).rejects.toMatchObject({ code: 'RESOURCE_EXHAUSTED' });
    client.close();
  });
});

describe('gRPC server HTTP/2 windows', () => {
  it('lets a client send a whole gradient before it reads again: a 16 MiB stream and connection window', async () => {
    const { connect } = await import('node:http2');
    const { MASTER_RECEIVE_WINDOW } = await import('../src/http2-window.js');
    const master = new Master({
      jobType: 'training',
      trainingShards: [{ name: 's', start: 0, count: 10 }],
      minibatchSize: 10,
      logger: silentLogger,
    });
    const server = await serveMaster(master, { token: TOKEN });
    const session = connect(`http://${server.address}`);
    try {
      // The server's SETTINGS (per-stream window), then its WINDOW_UPDATE (the connection's).
      await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
      expect(session.remoteSettings.initialWindowSize).toBe(MASTER_RECEIVE_WINDOW);
      for (let i = 0; i < 100 && (session.state.remoteWindowSize ?? 0) < MASTER_RECEIVE_WINDOW; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(session.state.remoteWindowSize).toBeGreaterThanOrEqual(MASTER_RECEIVE_WINDOW);
    } finally {
      session.close();
      await server.shutdown(1_000);
    }
  });
});
