import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Model files are loaded in a child process, as a worker loads them: resolution hooks and module
// caches are per process. The child imports the compiled package (`pnpm build`).
const WORKER_DIST = fileURLToPath(new URL('../dist/index.js', import.meta.url));
const run = promisify(execFile);

const TS_MODEL = `import { tf, tfl, type DatasetFn, type LossFn } from '@edl/worker';
import * as core from '@tensorflow/tfjs-core';
export const model = () =>
  tfl.sequential({ layers: [tfl.layers.dense({ name: 'd', inputShape: [2], units: 3, activation: 'softmax' })] });
export const loss: LossFn = (labels, outputs) => tf.losses.softmaxCrossEntropy(labels, outputs) as tf.Scalar;
export const optimizer = { name: 'sgd', params: { learningRate: 0.1 } } as const;
export const datasetFn: DatasetFn = async function* () {
  // Chained methods, as in code written for @tensorflow/tfjs.
  yield { features: core.tensor2d([[1, 2]]).square(), labels: tf.oneHot(tf.tensor1d([1], 'int32'), 3).toFloat() };
};
export const evalMetrics = { accuracy: 'accuracy' } as const;
`;
const JS_MODEL = TS_MODEL.replace(', type DatasetFn, type LossFn', '')
  .replace(': LossFn', '')
  .replace(': DatasetFn', '')
  .replace(' as tf.Scalar', '')
  .replaceAll(' as const', '');
const CJS_MODEL = `const tf = require('@tensorflow/tfjs');
exports.model = () =>
  tf.sequential({ layers: [tf.layers.dense({ name: 'd', inputShape: [2], units: 3, activation: 'softmax' })] });
exports.loss = (labels, outputs) => tf.losses.softmaxCrossEntropy(labels, outputs);
exports.optimizer = { name: 'sgd', params: { learningRate: 0.1 } };
exports.datasetFn = async function* () {
  yield { features: tf.tensor2d([[1, 2]]), labels: tf.oneHot(tf.tensor1d([1], 'int32'), 3).toFloat() };
};
exports.evalMetrics = { accuracy: 'accuracy' };
`;
const UNION_MODEL = JS_MODEL.replace(
  "import { tf, tfl } from '@edl/worker';\nimport * as core from '@tensorflow/tfjs-core';",
  "import * as tf from '@tensorflow/tfjs';\nconst tfl = tf;\nconst core = tf;",
);

const RUNNER = `import { loadModelDefinition, ModelRunner, selectBackend } from ${JSON.stringify(WORKER_DIST)};
await selectBackend({ backend: 'cpu' });
try {
  const definition = await loadModelDefinition(process.argv[2]);
  const runner = new ModelRunner(definition);
  for await (const batch of definition.datasetFn(null, 'training', { minibatchSize: 1, reader: {} })) {
    const step = await runner.computeGradients(batch);
    console.log(JSON.stringify({ loss: step.loss, gradients: step.gradients.map((g) => g.name) }));
  }
} catch (error) {
  console.log(JSON.stringify({ code: error.code, message: error.message }));
}
`;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-model-files-'));
  writeFileSync(path.join(dir, 'runner.mjs'), RUNNER);
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function place(files: Record<string, string>): string {
  const base = path.join(dir, `case-${Math.random().toString(36).slice(2)}`);
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(base, name)), { recursive: true });
    writeFileSync(path.join(base, name), text);
  }
  return base;
}

async function load(file: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [path.join(dir, 'runner.mjs'), file], { cwd: dir });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return JSON.parse(last) as Record<string, unknown>;
}

describe('model definition files outside the repository', () => {
  it.each([
    ['a .ts file with no package.json', { 'model.ts': TS_MODEL }, 'model.ts'],
    [
      'a .ts file in a package without "type": "module"',
      { 'package.json': '{"name":"m"}', 'model.ts': TS_MODEL },
      'model.ts',
    ],
    [
      'a .ts file in a "type": "module" package',
      { 'package.json': '{"type":"module"}', 'model.ts': TS_MODEL },
      'model.ts',
    ],
    ['a .mts file', { 'model.mts': TS_MODEL }, 'model.mts'],
    ['a .mjs file', { 'model.mjs': JS_MODEL }, 'model.mjs'],
    [
      'an ESM .js file without "type": "module"',
      { 'package.json': '{"name":"m"}', 'model.js': JS_MODEL },
      'model.js',
    ],
    ['a CommonJS .js file requiring @tensorflow/tfjs', { 'model.js': CJS_MODEL }, 'model.js'],
    ['an ESM file importing @tensorflow/tfjs', { 'model.mjs': UNION_MODEL }, 'model.mjs'],
  ])('loads %s and trains a step on the worker’s tfjs', async (_name, files, entry) => {
    const result = await load(path.join(place(files), entry));
    expect(result).toMatchObject({ gradients: ['d/kernel', 'd/bias'] });
    expect(Number.isFinite(result.loss)).toBe(true);
  });

  it('uses the worker’s tfjs when a copy is installed beside the model', async () => {
    const base = place({ 'model.ts': TS_MODEL });
    const core = path.dirname(createRequire(WORKER_DIST).resolve('@tensorflow/tfjs-core/package.json'));
    cpSync(core, path.join(base, 'node_modules', '@tensorflow', 'tfjs-core'), {
      recursive: true,
      dereference: true,
    });
    expect(await load(path.join(base, 'model.ts'))).toMatchObject({ gradients: ['d/kernel', 'd/bias'] });
  });

  it('names a second copy of tfjs that gets in by path in one error', async () => {
    const base = place({
      'model.ts': TS_MODEL.replace(
        "from '@tensorflow/tfjs-core'",
        "from './node_modules/@tensorflow/tfjs-core/dist/tf-core.node.js'",
      ),
    });
    const core = path.dirname(createRequire(WORKER_DIST).resolve('@tensorflow/tfjs-core/package.json'));
    const copy = path.join(base, 'node_modules', '@tensorflow', 'tfjs-core');
    cpSync(core, copy, { recursive: true, dereference: true });
    const result = await load(path.join(base, 'model.ts'));
    expect(result.code).toBe('TFJS_DUPLICATE');
    expect(result.message).toContain(`loaded a second copy of TensorFlow.js (@tensorflow/tfjs-core from `);
    expect(result.message).toContain(copy);
    expect(result.message).toContain(core.replace(/[\\/]$/, ''));
  });
});
