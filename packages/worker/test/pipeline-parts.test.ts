import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  batchRecords,
  formatTimerTable,
  loadModelDefinition,
  prefetch,
  sumTimerTotals,
  Timers,
  WorkerError,
} from '../src/index.js';

async function collect<T>(iterable: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const value of iterable) out.push(value);
  return out;
}

describe('prefetch', () => {
  it('keeps order, pulls ahead by depth, and stops the source when the consumer stops', async () => {
    let pulled = 0;
    let finalized = false;
    async function* source() {
      try {
        for (let i = 0; i < 10; i++) {
          pulled++;
          yield i;
        }
      } finally {
        finalized = true;
      }
    }
    const iterator = prefetch(source(), 3);
    expect((await iterator.next()).value).toBe(0);
    await new Promise((resolve) => setTimeout(resolve, 10));
    // One consumed, three buffered ahead (the refill after the first element is taken).
    expect(pulled).toBe(4);
    await iterator.return(undefined);
    expect(finalized).toBe(true);
    expect(await collect(prefetch(source(), 2))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(await collect(prefetch(source(), 0))).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('delivers the elements before an error, then the error', async () => {
    async function* failing() {
      yield 1;
      yield 2;
      throw new Error('disk on fire');
    }
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const value of prefetch(failing(), 4)) seen.push(value);
      })(),
    ).rejects.toThrow('disk on fire');
    expect(seen).toEqual([1, 2]);
  });

  it('rejects a bad depth', async () => {
    await expect(prefetch([] as never, -1).next()).rejects.toThrow(
      new RangeError('Expected a non-negative integer for depth but received -1'),
    );
  });
});

describe('batchRecords', () => {
  it('groups in order with a short last batch', async () => {
    async function* numbers() {
      for (let i = 0; i < 7; i++) yield i;
    }
    expect(await collect(batchRecords(numbers(), 3))).toEqual([[0, 1, 2], [3, 4, 5], [6]]);
    await expect(batchRecords(numbers(), 0).next()).rejects.toThrow(
      new RangeError('Expected a positive integer for size but received 0'),
    );
  });
});

describe('Timers', () => {
  it('adds spans per job and per task and prints the seed table', async () => {
    const timers = new Timers();
    timers.add('compute_loss', 1500, 7);
    timers.add('compute_loss', 500, 8);
    timers.add('get_task', 250);
    const value = await timers.time(
      'report_gradient',
      async () => {
        await new Promise((resolve) => setTimeout(resolve, 20));
        return 42;
      },
      7,
    );
    expect(value).toBe(42);
    timers.stop();
    const report = timers.toJSON();
    expect(report.job.compute_loss).toEqual({ seconds: 2, count: 2 });
    expect(report.job.get_task).toEqual({ seconds: 0.25, count: 1 });
    expect(report.job.report_gradient.seconds).toBeGreaterThanOrEqual(0.015);
    expect(report.tasks.map((t) => [t.taskId, t.compute_loss.seconds])).toEqual([
      [7, 1.5],
      [8, 0.5],
    ]);
    const table = timers.formatTable().split('\n');
    expect(table[0]).toMatch(
      /^Total Time\s+get_task\s+get_batch\s+input_fn\s+data_wait\s+compute_loss\s+get_model\s+report_gradient\s+wasted$/,
    );
    expect(table[1]?.trim().split(/\s+/).slice(1)).toEqual([
      '0.3',
      '0.0',
      '0.0',
      '0.0',
      '2.0',
      '0.0',
      '0.0',
      '0',
    ]);
    const both = formatTimerTable([
      { label: 'a', totalSeconds: 1, job: report.job },
      { label: 'sum', totalSeconds: 1, job: sumTimerTotals([report, report]) },
    ]);
    expect(both.split('\n')[2]).toMatch(/^sum\s+1\.0\s+0\.5\s/);
  });
});

describe('loadModelDefinition', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'edl-modeldef-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('loads a TypeScript file with types through tsx, and a default export', async () => {
    const file = path.join(dir, 'model.ts');
    await writeFile(
      file,
      `interface Spec { name: 'sgd'; params: Record<string, number> }
const optimizer: Spec = { name: 'sgd', params: { learningRate: 0.1 } };
export default {
  model: (): unknown => null,
  loss: (a: unknown, b: unknown): unknown => [a, b],
  optimizer,
  datasetFn: async function* (): AsyncGenerator<never> {},
  evalMetrics: { acc: 'accuracy' },
};\n`,
    );
    const definition = await loadModelDefinition(file);
    expect(definition.optimizer).toEqual({ name: 'sgd', params: { learningRate: 0.1 } });
    expect(definition.evalMetrics).toEqual({ acc: 'accuracy' });
    expect(typeof definition.datasetFn).toBe('function');
  });

  it('names the file and the member that is wrong', async () => {
    const file = path.join(dir, 'bad.mjs');
    await writeFile(
      file,
      `export const model = () => null; export const loss = () => 0; export const datasetFn = () => [];
export const optimizer = { name: 'rmsprop', params: {} };\n`,
    );
    const error = await loadModelDefinition(file).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe('MODEL_DEF_INVALID');
    expect((error as Error).message).toBe(
      `Expected { name: sgd | momentum | adam | adagrad, params } for optimizer in ${file} but received {"name":"rmsprop","params":{}}`,
    );
    const missing = await loadModelDefinition(path.join(dir, 'nope.ts')).catch((e: unknown) => e);
    expect((missing as WorkerError).code).toBe('MODEL_DEF_LOAD_FAILED');
    expect((missing as Error).message).toBe(`Model definition ${path.join(dir, 'nope.ts')} does not exist`);
  });
});
