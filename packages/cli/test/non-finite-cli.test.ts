/**
 * The non-finite guard end to end (issue 12): a CSV whose header row is read as data gives a NaN
 * loss; the job fails at once, naming the task, shard and records, unless --allow-non-finite.
 * The model file lives outside the repository and imports @edl/worker by name.
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runEdl } from './helpers/run-edl.js';

const MODEL = `import { tf, tfl, batchRecords } from '@edl/worker';
export const model = () =>
  tfl.sequential({ layers: [tfl.layers.dense({ name: 'out', inputShape: [2], units: 1, kernelInitializer: 'zeros' })] });
export const loss = (labels, outputs) => tf.losses.meanSquaredError(labels, outputs);
export const optimizer = { name: 'sgd', params: { learningRate: 0.01 } };
export const datasetFn = async function* (records, mode, meta) {
  for await (const rows of batchRecords(records, meta.minibatchSize)) {
    const x = tf.tensor2d(rows.map((r) => [Number(r[0]), Number(r[1])]));
    yield mode === 'prediction' ? { features: x } : { features: x, labels: tf.tensor2d(rows.map((r) => [Number(r[2])])) };
  }
};
export const evalMetrics = { mse: 'mse' };
`;

let dir: string;
let csv: string;
let modelFile: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-nonfinite-'));
  csv = path.join(dir, 'data.csv');
  const rows = ['x1,x2,y'];
  for (let i = 0; i < 200; i++) rows.push(`${(i % 7) / 7},${(i % 5) / 5},${(i % 3) / 3}`);
  writeFileSync(csv, `${rows.join('\n')}\n`);
  modelFile = path.join(dir, 'model.mjs');
  writeFileSync(modelFile, MODEL);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const args = () => [
  'train',
  '--model-def',
  modelFile,
  '--training-data',
  csv,
  '--num-workers',
  '1',
  '--minibatch-size',
  '20',
  '--num-minibatches-per-task',
  '2',
  '--num-epochs',
  '2',
  '--backend',
  'cpu',
  '--checkpoint-dir',
  path.join(dir, `ckpt-${Math.random().toString(36).slice(2)}`),
];

describe('edl train with a header row read as data', () => {
  it('warns about the header row, then fails the job at once on the NaN loss, naming where', async () => {
    const run = await runEdl(args(), dir);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `the first row of ${csv} looks like a header (x1, x2, y) but the reader's header option is not set`,
    );
    const failed = run.stderr.split('\n').find((l) => l.startsWith('job failed: '));
    expect(failed).toMatch(
      /^job failed: NON_FINITE: Task \d+ failed on worker worker-0: Non-finite training step on task \d+, records \[0, 20\) of '.*data\.csv:0-201': the loss is NaN\. Likely causes: a CSV header row read as data/,
    );
    expect(failed).toContain('a learning rate too high');
    // At once: no retry of the task on another attempt.
    expect(run.stderr).not.toContain('failed 3 times');
  }, 180_000);

  it('trains on with --allow-non-finite', async () => {
    const run = await runEdl([...args(), '--allow-non-finite'], dir);
    expect(run.stderr).not.toContain('Non-finite training step');
    expect(run.code).toBe(0);
  }, 180_000);

  it('trains without a warning when the header is declared, and keeps the model without --checkpoint-dir', async () => {
    const withoutCheckpointDir = args().slice(0, -2);
    const run = await runEdl([...withoutCheckpointDir, '--data-reader-params', '{"header":true}'], dir);
    expect(run.stderr).not.toContain('looks like a header');
    expect(run.code).toBe(0);
    const root = /no --checkpoint-dir: checkpoints and the trained model go to (\S+)\n/.exec(run.stderr)?.[1];
    expect(path.dirname(root as string)).toBe(path.join(dir, 'edl-output'));
    expect(path.basename(root as string)).toMatch(/^train-\d{8}-\d{6}$/);
    const modelJson = path.join(root as string, 'model', 'model.json');
    expect(run.stdout).toContain(`model exported in the TensorFlow.js format: ${modelJson}`);
    const exported = JSON.parse(readFileSync(modelJson, 'utf8')) as {
      format: string;
      weightsManifest: Array<{ paths: string[]; weights: Array<{ name: string }> }>;
    };
    expect(exported.format).toBe('layers-model');
    expect(exported.weightsManifest[0]?.weights.map((w) => w.name)).toEqual(['out/kernel', 'out/bias']);
    expect(statSync(path.join(root as string, 'model', 'weights.bin')).size).toBe(3 * 4);
    expect(readdirSync(path.join(root as string, 'checkpoints')).some((f) => f.endsWith('.edlckpt'))).toBe(
      true,
    );
  }, 180_000);
});
