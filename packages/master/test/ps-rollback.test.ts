/**
 * The exact checkpoint barrier and the job-wide roll-back of a job with parameter-server shards
 * (docs/master.md), on a real Master, two real shard servers (gRPC) and real checkpoint files.
 * Simulated workers follow a worker's order: a step's rows gradient is pushed only after the master
 * accepted the step, after a delay (a push still on the wire), and the next report is sent only
 * once the push was answered. Every committed checkpoint's shard files are compared with a replay
 * of the pushes of the steps its version covers.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddingClient, GradientStatus, ShardRpcError, TaskType } from '@edl/proto';
import {
  decodeEmbeddingTable,
  type ParameterServer,
  readShardMarkers,
  shardCheckpointDirName,
  shardOfId,
  startParameterServer,
} from '@edl/ps';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCheckpoints } from '../src/checkpoint.js';
import type { MasterLogger } from '../src/logger.js';
import { Master, type MasterOptions } from '../src/master.js';
import { type DrainedPushes, PushBarrier } from '../src/push-barrier.js';
import { sleep, waitFor } from './helpers.js';

const TOKEN = 'ps-rollback-token';
const RECORDS = 240;
const EPOCHS = 2;
const VOCABULARY = 60;
const DIM = 2;
const LEARNING_RATE = 0.5;
const JOB = { optimizer: { type: 'sgd' as const, learningRate: LEARNING_RATE }, seed: 3 };
const ALL_IDS = Float64Array.from({ length: VOCABULARY }, (_, i) => i);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-ps-rollback-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The ids of records [start, end): three per record, repeats included (the shard sums them). */
function idsOf(start: number, end: number): Float64Array {
  const ids: number[] = [];
  for (let r = start; r < end; r++) ids.push(r % VOCABULARY, (r * 7) % VOCABULARY, (r * 13) % 17);
  return Float64Array.from(ids);
}

/** A row gradient per id that differs by id, so that a missing or extra push shows. */
function gradientsOf(ids: Float64Array): Float32Array {
  const out = new Float32Array(ids.length * DIM);
  ids.forEach((id, i) => {
    out.fill(0.25 * (1 + (id % 3)), i * DIM, (i + 1) * DIM);
  });
  return out;
}

function shard(index: number, port = 0, restoreFrom?: { dir: string; version: number }) {
  return startParameterServer({
    token: TOKEN,
    shardIndex: index,
    numShards: 2,
    port,
    job: JOB,
    ...(restoreFrom === undefined ? {} : { restoreFrom }),
  });
}

/** The rows of every id as the shard files of checkpoint `version` hold them. */
async function rowsInFiles(version: number): Promise<Float32Array> {
  const out = new Float32Array(VOCABULARY * DIM);
  const versionDir = join(dir, shardCheckpointDirName(version));
  for (const marker of readShardMarkers(dir, version)) {
    const file = marker.tables.find((t) => t.name === 't')?.file as string;
    const table = decodeEmbeddingTable(new Uint8Array(await readFile(join(versionDir, file))), file);
    ALL_IDS.forEach((id) => {
      if (shardOfId(id, marker.numShards) === marker.shardIndex)
        out.set(table.lookup(new Float64Array([id])), id * DIM);
    });
  }
  return out;
}

/** A master training RECORDS records in 4-record minibatches, 3 per task, asynchronously. */
function trainingMaster(
  logger: MasterLogger,
  options: Pick<MasterOptions, 'numEpochs' | 'checkpointDir' | 'checkpointSteps' | 'keepCheckpoints'>,
): Master {
  return new Master({
    jobType: 'training',
    trainingShards: [{ name: 's', start: 0, count: RECORDS }],
    minibatchSize: 4,
    numMinibatchesPerTask: 3,
    trainEndCallback: false,
    logger,
    parameterStore: { mode: 'async', maxStaleness: 100, optimizer: JOB.optimizer },
    ...options,
  });
}

interface AcceptedStep {
  /** The model version the master answered with: the step's place in the job-wide order. */
  readonly version: number;
  readonly ids: Float64Array;
}

describe('parameter-server shards: exact checkpoint barrier and roll-back', () => {
  it('commits every push of the steps up to each cut, and rolls every shard and the task state back to the last cut when a shard is relaunched', async () => {
    const servers: ParameterServer[] = [await shard(0), await shard(1)];
    const client = new EmbeddingClient({ addresses: servers.map((s) => s.address), token: TOKEN, shardOfId });
    const logged: { message: string; fields: Record<string, unknown> }[] = [];
    let frozen = false;
    const accepted: AcceptedStep[] = [];
    let rollback: Record<string, unknown> | undefined;
    const logger: MasterLogger = {
      info: (message, fields = {}) => logged.push({ message, fields }),
      warn: (message, fields = {}) => {
        logged.push({ message, fields });
        if (message.startsWith('job rolled back')) {
          // Logged while steps are still paused: nothing is accepted after it until the check below.
          rollback = fields;
          frozen = true;
          const cut = fields.cutVersion as number;
          accepted.splice(0, accepted.length, ...accepted.filter((s) => s.version <= cut));
        }
      },
      error: (message, fields = {}) => logged.push({ message, fields }),
    };
    const master = trainingMaster(logger, {
      numEpochs: EPOCHS,
      checkpointDir: dir,
      checkpointSteps: 5,
      keepCheckpoints: 1000,
    });
    master.useParameterServers(client);
    await client.declareTables([{ name: 't', dim: DIM }], 'test');
    const initial = await client.pull('t', ALL_IDS, { create: false });
    master.reportVariables('w0', [{ name: 'w', shape: [1], values: new Float32Array([0]) }]);

    /** A push that waits out a shard being relaunched and declares the table again to a new one. */
    async function push(ids: Float64Array, workerId: string, modelVersion: number): Promise<void> {
      for (;;) {
        try {
          await client.push('t', ids, gradientsOf(ids), { modelVersion, workerId });
          return;
        } catch (error) {
          if (!(error instanceof ShardRpcError)) throw error;
          if (error.code === 'NOT_FOUND') await client.declareTables([{ name: 't', dim: DIM }], workerId);
          await sleep(20);
        }
      }
    }

    const trained = new Map<string, number>();
    async function worker(id: string): Promise<void> {
      for (;;) {
        await waitFor(() => !frozen, 'the roll-back check');
        const reply = master.getTask(id);
        if (reply.jobFinished) return;
        const task = reply.task;
        if (task === undefined || task.type === TaskType.WAIT) {
          await sleep(3);
          continue;
        }
        let start = task.start;
        let dropped = false;
        while (start < task.end && !dropped) {
          await waitFor(() => !frozen, 'the roll-back check');
          const end = Math.min(start + 4, task.end);
          const answer = master.reportGradient({
            workerId: id,
            taskId: task.id,
            rangeStart: start,
            rangeEnd: end,
            modelVersion: master.store.version,
            gradients: [{ name: 'w', shape: [1], values: new Float32Array([0.01]) }],
          });
          if (answer.status === GradientStatus.ACCEPTED) {
            const ids = idsOf(start, end);
            accepted.push({ version: answer.modelVersion, ids });
            trained.set(id, (trained.get(id) ?? 0) + end - start);
            // The push is still on the wire while other workers' steps are accepted.
            await sleep(Math.random() * 6);
            await push(ids, id, answer.modelVersion);
            start = end;
          } else if (answer.status === GradientStatus.STALE) {
            await sleep(2);
          } else if (answer.status === GradientStatus.TASK_NOT_HELD) {
            dropped = true;
          } else {
            throw new Error(`unexpected answer ${GradientStatus[answer.status]}`);
          }
        }
        if (!dropped) master.reportTaskResult(id, task.id, task.end - task.start, '');
      }
    }

    const workers = Promise.all(['w1', 'w2', 'w3'].map((id) => worker(id)));
    await waitFor(
      () => logged.filter((l) => l.message.startsWith('checkpoint written')).length >= 3,
      'three checkpoints',
      60_000,
    );
    // Shard 0 dies; its replacement listens on the same port, started from the last committed cut.
    const port = servers[0]?.port as number;
    await servers[0]?.shutdown(0);
    const committed = (await listCheckpoints(dir)).at(-1) as number;
    const relaunched = shard(0, port, { dir, version: committed });
    const rolledBack = master.onShardRelaunched(
      0,
      relaunched.then((s) => {
        servers[0] = s;
      }),
    );
    await rolledBack;
    expect(rollback, JSON.stringify(logged.slice(-5))).toBeDefined();
    const cutVersion = rollback?.cutVersion as number;
    expect(cutVersion).toBeGreaterThanOrEqual(committed);
    // Every shard holds exactly the cut's rows: the live one's later pushes and the pushes that
    // reached the relaunched one before the roll-back are gone.
    expect(await client.pull('t', ALL_IDS, { create: false })).toEqual(await rowsInFiles(cutVersion));
    const markers = readShardMarkers(dir, cutVersion);
    expect(String(rollback?.rows)).toBe(markers.map((m) => m.tables[0]?.rows).join(','));
    // The model version rose past every version handed out: gradients computed before are STALE.
    expect(rollback?.modelVersion as number).toBeGreaterThan(Math.max(...accepted.map((s) => s.version), 0));
    frozen = false;

    await workers;
    const result = await master.done;
    expect(result.state).toBe('succeeded');
    // Each record once per epoch in the final accounting; the records trained since the cut were
    // trained again and are counted as such.
    expect(master.status().recordsDone).toBe(RECORDS * EPOCHS);
    const rolledBackRecords = rollback?.recordsRolledBack as number;
    expect(rolledBackRecords).toBeGreaterThan(0);
    expect([...trained.values()].reduce((a, b) => a + b, 0)).toBe(RECORDS * EPOCHS + rolledBackRecords);

    // Every committed cut holds every push of the steps up to its version and none after.
    const versions = await listCheckpoints(dir);
    expect(versions.length).toBeGreaterThan(4);
    for (const version of versions) {
      const expected = Float64Array.from(initial);
      for (const step of accepted)
        if (step.version <= version) {
          const gradients = gradientsOf(step.ids);
          step.ids.forEach((id, i) => {
            for (let d = 0; d < DIM; d++)
              expected[id * DIM + d] =
                (expected[id * DIM + d] as number) - LEARNING_RATE * (gradients[i * DIM + d] as number);
          });
        }
      const files = await rowsInFiles(version);
      for (let i = 0; i < expected.length; i++)
        expect(files[i], `checkpoint ${version}, row float ${i}`).toBeCloseTo(expected[i] as number, 4);
    }
    const paused = logged
      .filter((l) => l.message.startsWith('checkpoint written'))
      .map((l) => l.fields.pausedMs);
    expect(paused.every((ms) => typeof ms === 'number')).toBe(true);
    client.close();
    await Promise.all(servers.map((s) => s.shutdown(0)));
  }, 120_000);
});

describe('a worker lost with its rows push on the way (Master.workerLost)', () => {
  it('asks the shards: a whole push changes nothing; a partial one, or a shard that cannot be asked, rolls the job back', async () => {
    const servers: ParameterServer[] = [await shard(0), await shard(1)];
    const client = new EmbeddingClient({ addresses: servers.map((s) => s.address), token: TOKEN, shardOfId });
    const logged: string[] = [];
    const logger: MasterLogger = {
      info: (message) => logged.push(message),
      warn: (message) => logged.push(message),
      error: (message) => logged.push(message),
    };
    const master = trainingMaster(logger, { numEpochs: 1, checkpointDir: join(dir, 'lost-push') });
    master.useParameterServers(client);
    const tables = [
      { name: 'a', dim: DIM },
      { name: 'b', dim: DIM },
    ];
    await client.declareTables(tables, 'test');
    master.reportVariables('w0', [{ name: 'w', shape: [1], values: new Float32Array([0]) }]);
    const initial = await client.pull('a', ALL_IDS, { create: false });

    /** One accepted step of `workerId`, then its rows push of the tables named (all: the whole step). */
    async function step(workerId: string, pushed: readonly string[]): Promise<void> {
      const task = master.getTask(workerId).task;
      if (task === undefined || task.type !== TaskType.TRAINING) throw new Error(`no task for ${workerId}`);
      const modelVersion = master.store.version;
      const answer = master.reportGradient({
        workerId,
        taskId: task.id,
        rangeStart: task.start,
        rangeEnd: task.start + 4,
        modelVersion,
        gradients: [{ name: 'w', shape: [1], values: new Float32Array([0.01]) }],
      });
      expect(answer.status).toBe(GradientStatus.ACCEPTED);
      const ids = idsOf(task.start, task.start + 4);
      for (const table of pushed)
        await client.push(table, ids, gradientsOf(ids), {
          workerId,
          modelVersion,
          stepPushes: tables.length,
        });
    }

    // Both tables' pushes reached both shards: the step is whole.
    await step('w1', ['a', 'b']);
    master.workerLost('w1', 'test', true);
    await waitFor(
      () => logged.some((m) => m.includes('reached every parameter-server shard')),
      'the verdict',
    );
    expect(logged.find((m) => m.startsWith('worker w1 was lost'))).toMatch(
      /^worker w1 was lost after its rows push of version \d+ reached every parameter-server shard: no roll-back$/,
    );
    expect(master.rollBacks).toEqual([]);
    expect(await client.pull('a', ALL_IDS, { create: false })).not.toEqual(initial);

    // Only table a's push went out: half of the step on each shard, so the job rolls back (to its
    // start: no checkpoint yet), and every shard's rows start from the initializer again.
    await step('w2', ['a']);
    master.workerLost('w2', 'test', true);
    await waitFor(() => master.rollBacks.length === 1, 'the roll-back');
    expect(master.rollBacks[0]).toMatchObject({
      shardIndex: 0,
      checkpoint: null,
      cause: expect.stringMatching(
        /^worker w2 was lost with its rows push of version \d+ missing at parameter-server shard 0 \(1 of its 2 pushes applied\)$/,
      ),
    });
    expect(master.rollBacks[0]?.recordsRolledBack).toBe(8);
    expect(logged).toContain(
      `job rolled back to its start after ${master.rollBacks[0]?.cause} (no checkpoint was committed yet)`,
    );
    expect(await client.pull('a', ALL_IDS, { create: false })).toEqual(initial);

    // Shard 1 is down when the master asks: treated as missing; it comes back on its address.
    await step('w3', ['a', 'b']);
    const port = servers[1]?.port as number;
    await servers[1]?.shutdown(0);
    master.workerLost('w3', 'test', true);
    await waitFor(() => logged.some((m) => m.startsWith('worker w3 was lost')), 'the verdict');
    servers[1] = await shard(1, port);
    await waitFor(() => master.rollBacks.length === 2, 'the second roll-back', 60_000);
    expect(master.rollBacks[1]?.shardIndex).toBe(1);
    expect(master.rollBacks[1]?.cause).toMatch(
      /^worker w3 was lost with its rows push of version \d+ missing at parameter-server shard 1 \(it could not be asked: describeShard to parameter-server shard 1 \(127\.0\.0\.1:\d+\) failed with UNAVAILABLE: .*\)$/,
    );
    client.close();
    await Promise.all(servers.map((s) => s.shutdown(0)));
  }, 120_000);
});

describe('PushBarrier', () => {
  it('drains once every worker with an accepted step reported again or was lost, and names the ones that never did', async () => {
    const barrier = new PushBarrier();
    barrier.accepted('a', 1);
    barrier.accepted('b', 1);
    let drained: DrainedPushes | undefined;
    const pause = barrier.pause(60_000).then((d) => {
      drained = d;
    });
    expect(barrier.paused).toBe(true);
    barrier.confirmed('a');
    await sleep(5);
    expect(drained).toBeUndefined();
    barrier.confirmed('b');
    await pause;
    expect(drained?.unconfirmed).toEqual([]);
    barrier.resume();
    expect(barrier.paused).toBe(false);

    barrier.accepted('c', 2);
    const timedOut = await barrier.pause(30);
    expect(timedOut.unconfirmed).toEqual(['c']);
    expect(timedOut.waitedMs).toBeGreaterThan(0);
  });

  it("tells a step at the same version as the worker's step before, but not a resent one", () => {
    const barrier = new PushBarrier();
    barrier.accepted('a', 4);
    expect(barrier.onTheWay('a')).toEqual({ modelVersion: 4, repeatsVersion: false });
    barrier.confirmed('a');
    expect(barrier.onTheWay('a')).toBeUndefined();
    barrier.accepted('a', 4);
    expect(barrier.onTheWay('a')).toEqual({ modelVersion: 4, repeatsVersion: true });
    barrier.confirmed('a');
    barrier.accepted('a', 6);
    // Its answer was lost: the worker sends it again and is told ALREADY_APPLIED.
    barrier.confirmed('a');
    barrier.accepted('a', 6, true);
    expect(barrier.onTheWay('a')).toEqual({ modelVersion: 6, repeatsVersion: false });
    barrier.forget('a');
    barrier.accepted('a', 6);
    expect(barrier.onTheWay('a')).toEqual({ modelVersion: 6, repeatsVersion: false });
  });
});
