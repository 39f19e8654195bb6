/**
 * `edl train | evaluate | predict` end to end: the built CLI, a real gRPC master, real worker
 * processes, real files. Needs `pnpm build` (the root `pnpm test` runs it first).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateCensusCsv, loadCensusTable } from '@edl/model-zoo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../../data/test/setup/postgres.js';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function runEdl(args: string[], onStderrLine?: (line: string, child: ChildProcess) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    // In the test's directory: a job without --checkpoint-dir writes ./edl-output there.
    const child = spawn(process.execPath, [edl, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderr += text;
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) onStderrLine?.(line, child);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Summary {
  state: string;
  modelVersion: number;
  records: {
    done: number;
    total: number;
    training: { done: number; total: number };
    evaluation: { done: number; total: number };
    prediction: { done: number; total: number };
  };
  evaluations: Array<{ records: number; metrics: Record<string, number> }>;
  workers: Array<{
    workerId: string;
    steps: number;
    lastLoss?: number;
    records: Record<string, number>;
    lost?: boolean;
  }>;
}

function summaryOf(run: Run): Summary {
  const line = run.stdout.split('\n').find((l) => l.startsWith('{"state"'));
  if (line === undefined) throw new Error(`no --stats JSON in stdout:\n${run.stdout}\n${run.stderr}`);
  return JSON.parse(line) as Summary;
}

let dir: string;
let train: string;
let valid: string;
const common = [
  '--model-def',
  'census',
  '--data-reader-params',
  '{"header":true,"recordsPerShard":500}',
  '--backend',
  'cpu',
];

beforeAll(async () => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-cli-'));
  train = await generateCensusCsv({ file: path.join(dir, 'train.csv'), rows: 2000, seed: 1 });
  valid = await generateCensusCsv({ file: path.join(dir, 'valid.csv'), rows: 400, seed: 2 });
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('edl train | evaluate | predict', () => {
  const ckpt = () => path.join(dir, 'ckpt');

  it('trains the census model with 2 worker processes down to a loss threshold', async () => {
    const run = await runEdl([
      'train',
      ...common,
      '--training-data',
      train,
      '--validation-data',
      valid,
      '--num-workers',
      '2',
      '--minibatch-size',
      '50',
      '--num-minibatches-per-task',
      '4',
      '--num-epochs',
      '4',
      '--checkpoint-dir',
      ckpt(),
      '--stats',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.state).toBe('succeeded');
    // Training and evaluation records are counted apart: done never exceeds total.
    expect(summary.records).toEqual({
      done: 8000,
      total: 8000,
      training: { done: 8000, total: 8000 },
      evaluation: { done: 400, total: 400 },
      prediction: { done: 0, total: 0 },
    });
    expect(summary.workers).toHaveLength(2);
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(8000);
    expect(Math.min(...summary.workers.map((w) => w.lastLoss ?? 1))).toBeLessThan(0.5);
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.75);
    expect(run.stdout).toMatch(
      /Total Time\s+get_task\s+get_batch\s+input_fn\s+data_wait\s+compute_loss\s+get_model\s+report_gradient/,
    );
    expect(run.stdout).toMatch(/^all workers\s+[\d.]+/m);
    // Not a terminal: structured logs, one JSON object per line, including the chosen backend.
    const events = run.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(events.filter((e) => e.msg === 'backend.selected').map((e) => e.backend)).toEqual(['cpu', 'cpu']);
  }, 120_000);

  it('evaluates the checkpoint (evaluation-only job)', async () => {
    const run = await runEdl([
      'evaluate',
      ...common,
      '--validation-data',
      valid,
      '--model-checkpoint',
      ckpt(),
      '--stats',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.evaluations).toHaveLength(1);
    expect(summary.evaluations[0]?.records).toBe(400);
    expect(summary.evaluations[0]?.metrics.accuracy).toBeGreaterThan(0.75);
    expect(run.stdout).toMatch(
      /evaluation round 1 \(model v\d+, 400 records\): accuracy=0\.\d{4} auc=0\.\d{4}/,
    );
  }, 60_000);

  it('predicts with the checkpoint into a JSON-lines file (prediction-only job)', async () => {
    const output = path.join(dir, 'predictions.jsonl');
    const run = await runEdl([
      'predict',
      ...common,
      '--prediction-data',
      valid,
      '--model-checkpoint',
      ckpt(),
      '--num-workers',
      '2',
      '--output',
      output,
    ]);
    expect(run.code, run.stderr).toBe(0);
    const lines = readFileSync(output, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { record: number; output: number[] });
    expect(lines.map((l) => l.record)).toEqual(Array.from({ length: 400 }, (_, i) => i));
    expect(
      lines.every((l) => l.output.length === 1 && (l.output[0] as number) > 0 && (l.output[0] as number) < 1),
    ).toBe(true);
  }, 60_000);

  it('finishes the job exactly once when a worker is SIGKILLed mid-job', async () => {
    let killed: number | undefined;
    const run = await runEdl(
      [
        'train',
        ...common,
        '--training-data',
        train,
        '--num-workers',
        '2',
        '--minibatch-size',
        '10',
        '--num-minibatches-per-task',
        '10',
        '--num-epochs',
        '3',
        '--stats',
      ],
      (line) => {
        if (killed !== undefined || !line.startsWith('{')) return;
        const event = JSON.parse(line) as { msg?: string; records?: number; pid?: number; worker?: string };
        if (
          event.msg === 'progress' &&
          (event.records ?? 0) >= 100 &&
          event.pid !== undefined &&
          event.worker === 'worker-1'
        ) {
          killed = event.pid;
          process.kill(event.pid, 'SIGKILL');
        }
      },
    );
    expect(killed).toBeDefined();
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.records).toMatchObject({ done: 6000, total: 6000, training: { done: 6000, total: 6000 } });
    // The killed worker stays in the stats and the timing table, marked as lost, with what it did
    // until its last progress report; its replacement (a new id) and the other worker ended.
    const lost = summary.workers.filter((w) => w.lost);
    expect(lost.map((w) => w.workerId)).toEqual(['worker-1']);
    expect(lost[0]!.steps).toBeGreaterThan(0);
    expect(summary.workers.length).toBeGreaterThanOrEqual(3);
    expect(run.stdout).toMatch(/^worker-1 \(lost\)\s+[\d.]+/m);
  }, 120_000);
});

describe('edl train with a user-written TypeScript model definition', () => {
  it('loads the .ts file through tsx in the worker processes and trains', async () => {
    const modelDef = fileURLToPath(new URL('../../worker/test/fixtures/tiny-model.ts', import.meta.url));
    const run = await runEdl([
      'train',
      '--model-def',
      modelDef,
      '--training-data',
      train,
      '--validation-data',
      valid,
      '--data-reader-params',
      '{"header":true}',
      '--backend',
      'cpu',
      '--num-workers',
      '2',
      '--minibatch-size',
      '50',
      '--num-epochs',
      '3',
      '--stats',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(6000);
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.7);
  }, 120_000);

  it("reads through the model definition's customDataReader", async () => {
    const modelDef = fileURLToPath(
      new URL('../../worker/test/fixtures/custom-reader-model.ts', import.meta.url),
    );
    const run = await runEdl([
      'train',
      '--model-def',
      modelDef,
      '--training-data',
      'synthetic:2000',
      '--validation-data',
      'synthetic:500',
      '--backend',
      'cpu',
      '--num-workers',
      '2',
      '--minibatch-size',
      '50',
      '--num-epochs',
      '4',
      '--stats',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.records.total).toBe(8000);
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(8000);
    expect(summary.evaluations.at(-1)?.records).toBe(500);
    expect(summary.evaluations.at(-1)?.metrics.accuracy).toBeGreaterThan(0.85);
  }, 120_000);

  it('names the member that a broken model definition lacks', async () => {
    const broken = path.join(dir, 'broken-model.mjs');
    await import('node:fs/promises').then((fs) => fs.writeFile(broken, 'export const model = () => null;\n'));
    const run = await runEdl(['train', '--model-def', broken, '--training-data', train]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(
      `Expected a function (labels, outputs) => tf.Scalar for loss in ${broken} but received undefined`,
    );
  }, 30_000);
});

describe('edl train on a PostgreSQL table', () => {
  let server: TestPostgres;
  beforeAll(async () => {
    server = await startPostgres();
    await loadCensusTable({
      connectionString: server.connectionString,
      table: 'census_train',
      rows: 1500,
      seed: 3,
    });
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
  });

  it('trains the census model from the table with 2 workers', async () => {
    const run = await runEdl([
      'train',
      '--model-def',
      'census',
      '--training-data',
      server.connectionString,
      '--data-reader-params',
      '{"table":"census_train","keyColumn":"id","recordsPerShard":500}',
      '--backend',
      'cpu',
      '--num-workers',
      '2',
      '--minibatch-size',
      '50',
      '--num-epochs',
      '3',
      '--stats',
    ]);
    expect(run.code, run.stderr).toBe(0);
    const summary = summaryOf(run);
    expect(summary.records).toMatchObject({ done: 4500, total: 4500, training: { done: 4500, total: 4500 } });
    expect(summary.workers.reduce((n, w) => n + (w.records.training ?? 0), 0)).toBe(4500);
    expect(Math.min(...summary.workers.map((w) => w.lastLoss ?? 1))).toBeLessThan(0.55);
  }, 120_000);
});
