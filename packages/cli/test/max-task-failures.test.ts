/**
 * `edl train --max-task-failures N` reaches the master's task manager: with a model whose datasetFn
 * fails on every task, the job fails once one task has failed N times, and says so.
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const failing = fileURLToPath(new URL('./fixtures/failing-model.ts', import.meta.url));

function train(extra: string[]) {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
  return spawnSync(
    process.execPath,
    [edl, 'train', '--model-def', failing, '--training-data', 'synthetic:64', '--backend', 'cpu', ...extra],
    { encoding: 'utf8', timeout: 110_000 },
  );
}

describe('edl train --max-task-failures', () => {
  it('fails the job when one task has failed N times', () => {
    const run = train([
      '--max-task-failures',
      '2',
      '--minibatch-size',
      '16',
      '--num-minibatches-per-task',
      '4',
    ]);
    expect(run.status, run.stderr).toBe(1);
    expect(run.stderr).toMatch(
      /job failed: .*failed 2 times, the limit \(maxTaskFailures\): .*this data set always fails/,
    );
  }, 120_000);
});
