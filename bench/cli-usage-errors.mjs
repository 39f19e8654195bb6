#!/usr/bin/env node
/**
 * How fast `edl` refuses a bad argument (issue: "in under 1 s"). Each case runs the built CLI in a
 * fresh process a few times and reports the median wall time, next to two baselines from the same
 * run: bare Node.js start-up (`node -e ''`) and a command that gets past its arguments and loads
 * TensorFlow.js, gRPC and the master (`edl train` with a model definition that does not exist).
 * Needs `pnpm build`. Runs in well under a minute.
 */
import { spawnSync } from 'node:child_process';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { machineLine } from './lib/machine.mjs';

const edl = fileURLToPath(new URL('../packages/cli/dist/bin/edl.js', import.meta.url));
const RUNS = Number(process.env.EDL_BENCH_RUNS ?? 5);
const env = { ...process.env, EDL_MASTER_ADDR: '127.0.0.1:9', EDL_JOB_TOKEN: 't', EDL_WORKER_ID: 'w' };
const TRAIN = ['--model-def', 'census', '--training-data', 'train.csv'];

function median(args, expectStatus) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const start = process.hrtime.bigint();
    const run = spawnSync(process.execPath, args, { env, encoding: 'utf8' });
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
    if (expectStatus !== undefined && run.status !== expectStatus) {
      throw new Error(`${args.join(' ')}: exit ${run.status}, expected ${expectStatus}\n${run.stderr}`);
    }
  }
  return times.sort((a, b) => a - b)[Math.floor(times.length / 2)];
}

console.log(
  `machine: ${machineLine()}; load average ${os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ')}`,
);
const node = median(['-e', ''], 0);
const heavy = median([edl, 'train', '--model-def', 'missing-model.ts', '--training-data', 'x.csv'], 1);
console.log(
  `baseline: node start-up ${node.toFixed(0)} ms; a job command that loads everything ${heavy.toFixed(0)} ms\n`,
);
const cases = [
  ['train', '--bogus'],
  ['train', ...TRAIN, '--num-workers', '-1'],
  ['evaluate', '--model-def', 'census', '--validation-data', 'v.csv'],
  ['master', '--training-data', 'x.csv', '--port', '99999'],
  ['master', '--training-data', 'x.csv', '--worker-command', '[1'],
  ['worker', '--model-def', 'census', '--training-data', 't.csv', '--minibatch-size', 'abc'],
  ['demo', '--num-workers', '0'],
  ['k8s', 'manifest', '--image', 'i', '--port', '0', ...TRAIN],
  ['recordio', 'cat', 'a.rio', '--count', '-1'],
];
console.log('| command line | median ms | x node start-up | / loading everything |');
console.log('|---|---:|---:|---:|');
let worst = 0;
for (const args of cases) {
  const ms = median([edl, ...args], 2);
  worst = Math.max(worst, ms);
  console.log(
    `| edl ${args.join(' ')} | ${ms.toFixed(0)} | ${(ms / node).toFixed(1)} | ${(ms / heavy).toFixed(2)} |`,
  );
}
console.log(`\nslowest usage error: ${worst.toFixed(0)} ms (${worst < 1000 ? 'under' : 'OVER'} 1 s)`);
