/**
 * What the live view and /metrics report when a worker crashes: real master, real worker processes
 * (the simulated worker over real gRPC), one of them killed while it holds a task.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JobStatusSnapshot } from '../src/job-status.js';
import type { LocalInstanceManager } from '../src/local-instance-manager.js';
import { silentLogger } from '../src/logger.js';
import { type MasterHandle, startMaster } from '../src/start-master.js';
import { buildDist, simWorker, waitFor } from './helpers.js';

beforeAll(() => buildDist(['-b packages/proto', '-b packages/data']), 180_000);

const RECORDS = 400;
let handle: MasterHandle | undefined;
afterAll(async () => {
  await handle?.stop();
});

async function get(path: string, token: string): Promise<Response> {
  return fetch(`${handle?.liveView?.origin}${path}`, { headers: { authorization: `Bearer ${token}` } });
}

function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('live view of a job that loses a worker', () => {
  it('counts the crash, the recovered tasks and the relaunch', async () => {
    handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'shard-a', start: 0, count: RECORDS }],
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      numEpochs: 1,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      jobId: 'crash-test',
      http: {},
      workers: {
        args: [simWorker],
        numWorkers: 2,
        maxRestarts: 3,
        env: {
          SIM_RECORDS: String(RECORDS),
          SIM_MINIBATCH: '10',
          SIM_STEP_DELAY_MS: '20',
          SIM_TRANSPORT: 'stream',
        },
        onOutput: () => {},
      },
    });
    const token = handle.token;
    const instances = handle.instanceManager as LocalInstanceManager;
    const master = handle.master;
    let victim: { workerId: string; pid: number } | undefined;
    await waitFor(() => {
      const busy = master.taskManager.inFlight().find((t) => t.progress > t.start && t.progress < t.end);
      const pid = busy && instances.workers().find((w) => w.workerId === busy.workerId)?.pid;
      if (busy && pid) victim = { workerId: busy.workerId, pid };
      return victim !== undefined || master.taskManager.finished;
    }, 'a worker in mid-task');
    expect(victim).toBeDefined();
    process.kill(victim?.pid as number, 'SIGKILL');
    const result = await handle.wait();
    expect(result.state).toBe('succeeded');

    const status = (await (await get('/api/status', token)).json()) as JobStatusSnapshot;
    expect(status.job).toMatchObject({ id: 'crash-test', state: 'succeeded', workerRelaunches: 1 });
    expect(status.job.records.training).toEqual({ done: RECORDS, total: RECORDS });
    const types = status.events.map((e) => e.type);
    expect(types).toContain('worker-lost');
    expect(types).toContain('task-recovered');
    expect(types).toContain('worker-relaunched');
    const lost = status.workers.find((w) => w.id === victim?.workerId);
    expect(lost?.state).toBe('lost');
    expect(status.workers).toHaveLength(3);
    expect(status.workers.find((w) => w.restarts === 1)?.id).toBe('worker-2');
    // The crashed worker's task went back to todo once, then completed. It had made progress, so
    // the crash interrupted it rather than failed it: no failure counted.
    expect(status.tasks).toEqual([
      { label: 'epoch 1', kind: 'training', total: 10, todo: 0, doing: 0, done: 10, failed: 0 },
    ]);

    const metrics = await (await get('/metrics', token)).text();
    expect(sample(metrics, 'edl_worker_relaunches_total{job_id="crash-test"}')).toBe(1);
    expect(sample(metrics, 'edl_workers{state="lost",job_id="crash-test"}')).toBe(1);
    expect(sample(metrics, 'edl_tasks{state="failed",job_id="crash-test"}')).toBe(0);
    expect(sample(metrics, 'edl_tasks{state="done",job_id="crash-test"}')).toBe(10);
    expect(sample(metrics, 'edl_records_total{kind="training",job_id="crash-test"}')).toBe(RECORDS);
    expect(sample(metrics, 'edl_gradients_total{outcome="applied",job_id="crash-test"}')).toBe(
      result.modelVersion,
    );
    // Every applied gradient lands in one staleness bucket.
    const staleness = metrics
      .split('\n')
      .filter((l) => l.startsWith('edl_gradient_staleness_total{'))
      .reduce((n, l) => n + Number(l.split(' ')[1]), 0);
    expect(staleness).toBe(result.modelVersion);
  }, 120_000);
});
