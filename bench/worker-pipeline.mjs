#!/usr/bin/env node
/**
 * Seed 004's experiment in our system: one worker, CIFAR-10-like RecordIO data, minibatch 128,
 * 32 minibatches per task, grads_to_wait 1, the same model and data, two loops measured in the same
 * run: the serialized loop of July 2019 (`--prefetch 0`: get_batch, then input_fn, then compute,
 * for each minibatch) and the shared prefetching dataset (`--prefetch 2`). Each loop is a full
 * `edl train` job (a master plus one `edl worker` process); the worker's timers are printed for both.
 *
 * Environment: EDL_BENCH_RECORDS (default 8192), EDL_BENCH_MODEL (cifar10-small; cifar10 is the
 * full CNN), EDL_BENCH_BACKEND (wasm), EDL_BENCH_REPEAT (1: runs per loop, round-robin, best kept).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineLine } from './lib/machine.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const edl = path.join(root, 'packages/cli/dist/bin/edl.js');
const zoo = path.join(root, 'packages/model-zoo/dist/index.js');
if (!existsSync(edl) || !existsSync(zoo)) throw new Error('build first: pnpm build');

const records = Number(process.env.EDL_BENCH_RECORDS ?? 8192);
const model = process.env.EDL_BENCH_MODEL ?? 'cifar10-small';
const backend = process.env.EDL_BENCH_BACKEND ?? 'wasm';
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 1);
const dataDir = path.join(root, 'bench/data', `cifar10-like-${records}`);

const { generateCifar10Like } = await import(zoo);
if (!existsSync(dataDir) || readdirSync(dataDir).filter((f) => f.endsWith('.rio')).length !== 4) {
  mkdirSync(dataDir, { recursive: true });
  console.log(`generating ${records} CIFAR-10-like records in ${dataDir}`);
  await generateCifar10Like({ dir: dataDir, records, files: 4, seed: 1 });
}

function runLoop(prefetch) {
  const args = [
    edl,
    'train',
    '--model-def',
    model,
    '--training-data',
    dataDir,
    '--num-workers',
    '1',
    '--minibatch-size',
    '128',
    '--num-minibatches-per-task',
    '32',
    '--grads-to-wait',
    '1',
    '--backend',
    backend,
    '--prefetch',
    String(prefetch),
    '--stats',
  ];
  const run = spawnSync(process.execPath, args, { encoding: 'utf8', maxBuffer: 64 * 2 ** 20 });
  if (run.status !== 0)
    throw new Error(`edl train --prefetch ${prefetch} failed:\n${run.stderr.slice(-4000)}`);
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
  const worker = JSON.parse(line).workers[0];
  return worker.timers;
}

const loops = [
  { name: 'serialized (prefetch 0)', prefetch: 0, best: undefined },
  { name: 'shared prefetching dataset', prefetch: 2, best: undefined },
];
for (let pass = 0; pass < repeat; pass++) {
  for (const loop of loops) {
    const timers = runLoop(loop.prefetch);
    if (loop.best === undefined || timers.totalSeconds < loop.best.totalSeconds) loop.best = timers;
  }
}

console.log(`machine: ${machineLine()}`);
console.log(
  `model ${model}, backend ${backend}, ${records} records, minibatch 128, 32 minibatches per task, 1 worker`,
);
const columns = [
  'get_task',
  'get_batch',
  'input_fn',
  'data_wait',
  'compute_loss',
  'get_model',
  'report_gradient',
];
console.log(`| loop | Total | ${columns.join(' | ')} |`);
console.log(`|---|${'---:|'.repeat(columns.length + 1)}`);
for (const { name, best } of loops) {
  console.log(
    `| ${name} | ${best.totalSeconds.toFixed(1)} | ${columns.map((c) => best.job[c].seconds.toFixed(1)).join(' | ')} |`,
  );
}
const [serial, pipelined] = loops.map((l) => l.best);
const steps = pipelined.job.compute_loss.count;
console.log(
  `pipelined total / serialized total: ${((100 * pipelined.totalSeconds) / serial.totalSeconds).toFixed(1)}% (goal <= 47%)`,
);
console.log(
  `data wait per step, pipelined: ${((100 * pipelined.job.data_wait.seconds) / pipelined.totalSeconds).toFixed(1)}% of step time (goal <= 2%), ${steps} steps`,
);
