/**
 * The data pipeline tuner's values on /metrics and /api/status: a real master serving HTTP and gRPC,
 * and a real MasterClient sending a worker's heartbeat with the tuner's report, as `edl worker` does.
 */
import { MasterClient, type WorkerStatsReport } from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPipelineRow } from '../src/http/data-pipeline-metrics.js';
import { silentLogger } from '../src/logger.js';
import { type MasterHandle, startMaster } from '../src/start-master.js';
import { buildDist } from './helpers.js';

beforeAll(() => buildDist(['-b packages/proto', '-b packages/data']), 180_000);

let handle: MasterHandle | undefined;
afterAll(async () => {
  await handle?.stop();
});

const REPORT: WorkerStatsReport = {
  backend: 'cpu',
  steps: 3,
  records: { training: 30, evaluation: 0, prediction: 0 },
  lossSteps: 0,
  elapsedSeconds: 1.5,
  timerSeconds: {},
  dataPipeline: {
    ramBudgetBytes: 2 ** 31,
    cpuBudget: 4,
    modelledBytes: 50_331_900,
    stages: [
      {
        label: 'ParallelMap(parse)',
        parallelism: 3,
        bufferSize: 6,
        inputPerSecond: 5000,
        workPerSecond: 400.5,
        consumerPerSecond: 1200,
        elementBytes: 84,
        elements: 900,
        lastChangeAtElement: 12,
      },
      {
        label: 'Prefetch',
        parallelism: 1,
        bufferSize: 7,
        inputPerSecond: 1100,
        workPerSecond: 0,
        consumerPerSecond: 900,
        elementBytes: 2048,
        elements: 30,
        lastChangeAtElement: 2,
      },
    ],
  },
};

function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe("the data pipeline's tuner on /metrics and the live view", () => {
  it('shows each stage of each worker: settings, measured rates and budgets', async () => {
    handle = await startMaster({
      jobType: 'training',
      trainingShards: [{ name: 'shard-a', start: 0, count: 100 }],
      minibatchSize: 10,
      numMinibatchesPerTask: 4,
      numEpochs: 1,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 1 } },
      logger: silentLogger,
      jobId: 'tuner-test',
      http: {},
    });
    const client = await MasterClient.connect(handle.address, handle.token);
    try {
      await client.heartbeat('worker-1', REPORT);
    } finally {
      client.close();
    }
    const get = (path: string) =>
      fetch(`${handle?.liveView?.origin}${path}`, { headers: { authorization: `Bearer ${handle?.token}` } });
    const metrics = await (await get('/metrics')).text();
    const w = 'worker="worker-1"';
    const map = `${w},stage="ParallelMap(parse)",position="0"`;
    expect(sample(metrics, `edl_data_ram_budget_bytes{${w},job_id="tuner-test"}`)).toBe(2 ** 31);
    expect(sample(metrics, `edl_data_cpu_budget_threads{${w},job_id="tuner-test"}`)).toBe(4);
    expect(sample(metrics, `edl_data_modelled_bytes{${w},job_id="tuner-test"}`)).toBe(50_331_900);
    expect(sample(metrics, `edl_data_stage_parallelism{${map},job_id="tuner-test"}`)).toBe(3);
    expect(sample(metrics, `edl_data_stage_buffer_size{${map},job_id="tuner-test"}`)).toBe(6);
    expect(
      sample(metrics, `edl_data_stage_elements_per_second{${map},side="work",job_id="tuner-test"}`),
    ).toBe(400.5);
    expect(
      sample(metrics, `edl_data_stage_buffer_size{${w},stage="Prefetch",position="1",job_id="tuner-test"}`),
    ).toBe(7);
    const status = (await (await get('/api/status')).json()) as { dataPipelines: DataPipelineRow[] };
    expect(status.dataPipelines).toEqual([{ worker: 'worker-1', ...REPORT.dataPipeline }]);
  }, 120_000);
});
