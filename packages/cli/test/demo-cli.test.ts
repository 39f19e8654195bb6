/**
 * `edl demo`: synthetic CIFAR-10-like RecordIO data, the small CNN (conv, batch norm, pooling)
 * trained by 2 worker processes on wasm, evaluation, and the timing table. Needs `pnpm build`.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-demo-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('edl demo', () => {
  it('trains the MNIST CNN on real digits with 2 workers, reports test accuracy and exports the model', () => {
    // A quick run (1,024 training digits, one epoch); the default is 8,000 digits and 6 epochs.
    const keep = path.join(dir, 'mnist');
    const run = spawnSync(
      process.execPath,
      [edl, 'demo', '--records', '1024', '--num-epochs', '1', '--backend', 'wasm', '--keep', keep, '--stats'],
      { encoding: 'utf8', timeout: 200_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{"state"')) as string) as {
      records: { total: number };
      evaluations: Array<{ records: number; metrics: Record<string, number> }>;
      workers: Array<{ records: { training: number } }>;
    };
    expect(summary.records.total).toBe(1024);
    expect(summary.workers).toHaveLength(2);
    expect(summary.evaluations.at(-1)?.records).toBe(2000);
    // Real handwriting: well above chance (0.1) after one pass over 1,024 digits, with the
    // learning rate decaying to 0 over that one short pass (the demo's cosine decay).
    const accuracy = summary.evaluations.at(-1)?.metrics.accuracy as number;
    expect(accuracy).toBeGreaterThan(0.5);
    expect(run.stdout).toContain(
      `test accuracy: ${(accuracy * 100).toFixed(2)}% on 2,000 held-out MNIST digits`,
    );
    expect(run.stdout).toMatch(/Total Time\s+get_task/);
    expect(run.stdout).toContain(
      `model exported in the TensorFlow.js format: ${path.join(keep, 'model', 'model.json')}`,
    );
    expect(existsSync(path.join(keep, 'model', 'weights.bin'))).toBe(true);
  }, 220_000);

  it('rejects an unknown --dataset', () => {
    const run = spawnSync(process.execPath, [edl, 'demo', '--dataset', 'imagenet'], { encoding: 'utf8' });
    expect(run.status).toBe(2);
    expect(run.stderr).toContain(
      "Expected one of mnist, cifar10-synthetic for --dataset but received 'imagenet'",
    );
  });

  it('prints its help', () => {
    const run = spawnSync(process.execPath, [edl, 'demo', '--help'], { encoding: 'utf8' });
    expect(run.status).toBe(0);
    expect(run.stdout).toMatch(/^Usage: edl demo/);
  });

  it('generates CIFAR-10-like RecordIO data and trains the CNN with 2 workers on wasm', () => {
    const keep = path.join(dir, 'data');
    const run = spawnSync(
      process.execPath,
      [
        edl,
        'demo',
        '--dataset',
        'cifar10-synthetic',
        '--records',
        '768',
        '--num-epochs',
        '1',
        '--backend',
        'wasm',
        '--keep',
        keep,
        '--stats',
      ],
      { encoding: 'utf8', timeout: 150_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    expect(readdirSync(path.join(keep, 'train')).filter((f) => f.endsWith('.rio'))).toHaveLength(4);
    const summary = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{"state"')) as string) as {
      state: string;
      records: { total: number };
      evaluations: Array<{ metrics: Record<string, number> }>;
      workers: Array<{ backend: string; records: { training: number } }>;
    };
    expect(summary.state).toBe('succeeded');
    expect(summary.records.total).toBe(768);
    expect(summary.workers.map((w) => w.backend)).toEqual(['wasm', 'wasm']);
    expect(summary.workers.reduce((n, w) => n + w.records.training, 0)).toBe(768);
    // Ten classes: chance is 0.1. One asynchronous pass over 768 records lands anywhere from about
    // 0.48 to 0.81 with the timing of the two workers, so the check is that it learned at all.
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.3);
    expect(run.stdout).toMatch(
      /Total Time\s+get_task\s+get_batch\s+input_fn\s+data_wait\s+compute_loss\s+get_model\s+report_gradient/,
    );
    expect(existsSync(path.join(keep, 'checkpoints', 'non-trainable-weights.json'))).toBe(true);
    expect(existsSync(path.join(keep, 'model', 'model.json'))).toBe(true);

    // A fresh worker evaluates the checkpoint with the batch-norm statistics saved beside it.
    const evaluation = spawnSync(
      process.execPath,
      [
        edl,
        'evaluate',
        '--model-def',
        'cifar10-small',
        '--validation-data',
        path.join(keep, 'valid'),
        '--model-checkpoint',
        path.join(keep, 'checkpoints'),
        '--backend',
        'wasm',
        '--stats',
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(evaluation.status, evaluation.stderr).toBe(0);
    const evaluated = JSON.parse(
      evaluation.stdout.split('\n').find((l) => l.startsWith('{"state"')) as string,
    ) as {
      evaluations: Array<{ records: number; metrics: Record<string, number> }>;
    };
    expect(evaluated.evaluations[0]?.records).toBe(192);
    expect(evaluated.evaluations[0]?.metrics.accuracy).toBeGreaterThan(0.5);
  }, 220_000);

  it('trains the CNN in a worker process on webgpu over the software Vulkan driver', () => {
    const run = spawnSync(
      process.execPath,
      [
        edl,
        'demo',
        '--dataset',
        'cifar10-synthetic',
        '--keep',
        path.join(dir, 'webgpu'),
        '--records',
        '512',
        '--num-epochs',
        '1',
        '--num-workers',
        '1',
        '--backend',
        'webgpu',
        '--stats',
      ],
      { encoding: 'utf8', timeout: 120_000 },
    );
    expect(run.status, run.stderr).toBe(0);
    const summary = JSON.parse(run.stdout.split('\n').find((l) => l.startsWith('{"state"')) as string) as {
      state: string;
      workers: Array<{ backend: string; records: { training: number } }>;
      evaluations: Array<{ metrics: Record<string, number> }>;
    };
    expect(summary.state).toBe('succeeded');
    expect(summary.workers.map((w) => [w.backend, w.records.training])).toEqual([['webgpu', 512]]);
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.3);
  }, 130_000);
});
