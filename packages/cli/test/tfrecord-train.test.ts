/**
 * `edl train --training-data DIR_OF_TFRECORDS`: the zoo's `tf-example` model (a datasetFn that maps
 * `parseExample(spec)` over the records) trained by 2 worker processes on TFRecord files of
 * tf.train.Examples, evaluated on a GZIP-compressed TFRecord file. Needs `pnpm build`.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateTfExampleRecords } from '@edl/model-zoo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
let dir: string;

beforeAll(async () => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-tfrecord-train-'));
  await generateTfExampleRecords({ dir: path.join(dir, 'train'), records: 2000, files: 2, seed: 1 });
  await generateTfExampleRecords({
    dir: path.join(dir, 'valid'),
    records: 400,
    files: 1,
    seed: 2,
    compression: 'gzip',
  });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function runEdl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [edl, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('edl train on TFRecord files of tf.train.Examples', () => {
  it('trains the tf-example model with 2 workers and evaluates it on a GZIP TFRecord file', async () => {
    const run = await runEdl([
      'train',
      '--model-def',
      'tf-example',
      '--training-data',
      path.join(dir, 'train'),
      '--validation-data',
      path.join(dir, 'valid'),
      '--num-workers',
      '2',
      '--minibatch-size',
      '50',
      '--num-minibatches-per-task',
      '4',
      '--num-epochs',
      '3',
      '--backend',
      'cpu',
      '--stats',
    ]);
    expect(run.code, run.stderr.slice(-2000)).toBe(0);
    const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
    expect(line, run.stdout).toBeDefined();
    const summary = JSON.parse(line as string) as {
      state: string;
      evaluations: Array<{ records: number; metrics: Record<string, number> }>;
      workers: Array<{ lastLoss?: number; records: Record<string, number> }>;
    };
    expect(summary.state).toBe('succeeded');
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(6000);
    expect(summary.evaluations.at(-1)?.records).toBe(400);
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.9);
    expect(Math.min(...summary.workers.map((w) => w.lastLoss ?? 10))).toBeLessThan(0.5);
  }, 180_000);
});
