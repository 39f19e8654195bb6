/**
 * Records stay attributed to their tasks (issue 26 item 0), in real worker processes of `edl
 * train`: the MNIST definition's shuffle buffer keeps every task's records in that task, so the
 * exactly-once count holds while a worker is SIGKILLed mid-job; a datasetFn that filters the
 * records fails its tasks with an error naming the transform.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeMnistRecordIO } from '@edl/model-zoo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EDL_BIN, killWorkerAfter, runEdl } from './helpers/run-edl.js';

const MODEL_ZOO = pathToFileURL(
  fileURLToPath(new URL('../../model-zoo/dist/index.js', import.meta.url)),
).href;
const TRAIN_RECORDS = 640;
const EPOCHS = 2;

let dir: string;
let data: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-attribution-'));
  data = path.join(dir, 'mnist');
  await writeMnistRecordIO({
    dir: data,
    testRecords: 100,
    trainRecords: TRAIN_RECORDS,
    trainFiles: 2,
    seed: 1,
  });
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const trainArgs = (modelDef: string, extra: string[] = []) => [
  'train',
  '--model-def',
  modelDef,
  '--training-data',
  path.join(data, 'train'),
  '--backend',
  'wasm',
  '--minibatch-size',
  '32',
  '--num-minibatches-per-task',
  '5',
  ...extra,
];

describe('records stay attributed to their tasks in edl train', () => {
  it('trains MNIST with its shuffle buffer and counts every record once per epoch while a worker is SIGKILLed', async () => {
    const kill = killWorkerAfter('worker-1', 100);
    const run = await runEdl(
      trainArgs('mnist', ['--num-workers', '2', '--num-epochs', String(EPOCHS), '--stats']),
      dir,
      kill.onLine,
    );
    expect(kill.killed()).toBeDefined();
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
    const summary = JSON.parse(line ?? '{}') as {
      records?: { training?: { done: number; total: number } };
      workers?: { lost?: boolean }[];
    };
    const total = TRAIN_RECORDS * EPOCHS;
    expect(summary.records?.training).toEqual({ done: total, total });
    expect(summary.workers?.some((w) => w.lost === true)).toBe(true);
  }, 240_000);

  it('fails the tasks of a datasetFn that filters the records, naming the transform', async () => {
    const modelDef = path.join(dir, 'filtering-model.mjs');
    await writeFile(
      modelDef,
      [
        `import { mnistDefinition } from ${JSON.stringify(MODEL_ZOO)};`,
        'const mnist = mnistDefinition();',
        '// Drops blank digits: the worker would count the records after them to the wrong tasks.',
        'export default { ...mnist, datasetFn: (records, mode, metadata) =>',
        '  mnist.datasetFn(records.filter((record) => record[1] !== 0), mode, metadata) };',
        '',
      ].join('\n'),
    );
    const run = await runEdl(
      trainArgs(modelDef, ['--num-workers', '1', '--num-epochs', '1', '--max-task-failures', '1']),
      dir,
    );
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /job failed: .*Filter over TaskFeed\(training\) would drop records: the records of TaskFeed\(training\) are counted to their tasks/,
    );
  }, 120_000);
});
