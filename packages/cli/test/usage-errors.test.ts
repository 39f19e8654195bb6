/**
 * Usage errors of every `edl` command: all arguments are checked before anything heavy loads, and
 * a bad one gives one line `edl <cmd>: <message>`, then the command's usage, exit status 2.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { JOB_TYPES } from '@edl/master';
import { BACKEND_ORDER } from '@edl/worker';
import { describe, expect, it } from 'vitest';
import { MASTER_JOB_TYPES } from '../src/commands/master.js';
import { BACKEND_CHOICES, parseJobOptions } from '../src/job/job-options.js';
import { runCli } from '../src/main.js';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const hooks = fileURLToPath(new URL('./fixtures/record-heavy-imports.mjs', import.meta.url));
/** An address where nothing listens: a worker that tried to connect would wait for it. */
const workerEnv = { EDL_MASTER_ADDR: '127.0.0.1:9', EDL_JOB_TOKEN: 'token', EDL_WORKER_ID: 'worker-0' };

async function runInProcess(argv: string[]) {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  let out = '';
  let err = '';
  stdout.on('data', (c: Buffer) => {
    out += c.toString();
  });
  stderr.on('data', (c: Buffer) => {
    err += c.toString();
  });
  const code = await runCli(argv, { stdout, stderr, stdin: new PassThrough(), isTTY: false });
  return { code, out, err };
}

const TRAIN = ['--model-def', 'census', '--training-data', 'train.csv'];

const cases: Array<[string[], string | RegExp]> = [
  [['train', '--bogus'], "edl train: Unknown option '--bogus'"],
  [
    ['train', ...TRAIN, '--num-workers', '-1'],
    "edl train: Expected an integer in [1, 10000] for --num-workers but received '-1'",
  ],
  [
    ['train', ...TRAIN, '--minibatch-size', '0'],
    "edl train: Expected an integer >= 1 for --minibatch-size but received '0'",
  ],
  [
    ['train', ...TRAIN, '--minibatch-size', 'abc'],
    "edl train: Expected an integer >= 1 for --minibatch-size but received 'abc'",
  ],
  [
    ['train', ...TRAIN, '--max-task-failures', '0'],
    "edl train: Expected an integer >= 1 for --max-task-failures but received '0'",
  ],
  [
    ['train', ...TRAIN, '--backend', 'tpu'],
    "edl train: Expected one of auto, webgpu, tensorflow, wasm, cpu for --backend but received 'tpu'",
  ],
  [
    ['train', ...TRAIN, '--data-reader-params', '{"header":'],
    'edl train: Expected a JSON object for --data-reader-params but received \'{"header":\' (Unexpected end of JSON input)',
  ],
  [
    ['train', ...TRAIN, '--data-reader-params', '[1]'],
    "edl train: Expected a JSON object for --data-reader-params but received '[1]'",
  ],
  [['train', ...TRAIN, '--num-epochs'], 'edl train: option --num-epochs needs a value'],
  [['train', ...TRAIN, 'extra'], "edl train: unexpected argument 'extra'"],
  [['train', '--model-def', 'census'], 'edl train: --training-data is required'],
  [
    ['evaluate', '--model-def', 'census', '--validation-data', 'v.csv'],
    'edl evaluate: --model-checkpoint (or --checkpoint-dir) is required: evaluation needs a trained model',
  ],
  [
    ['predict', '--model-def', 'census', '--prediction-data', 'p.csv', '--seed', 'x'],
    "edl predict: Expected an integer in [0, 4294967295] for --seed but received 'x'",
  ],
  [['master', '--bogus'], "edl master: Unknown option '--bogus'"],
  [
    ['master', '--training-data', 'x.csv', '--port', '99999'],
    "edl master: Expected an integer in [0, 65535] for --port but received '99999'",
  ],
  [
    ['master', '--training-data', 'x.csv', '--num-workers', '-1'],
    "edl master: Expected an integer in [0, 10000] for --num-workers but received '-1'",
  ],
  [
    ['master', '--training-data', 'x.csv', '--minibatch-size', '0'],
    "edl master: Expected an integer >= 1 for --minibatch-size but received '0'",
  ],
  [
    ['master', '--training-data', 'x.csv', '--worker-command', '["node", 1]'],
    'edl master: Expected a JSON array of strings for --worker-command but received \'["node", 1]\'',
  ],
  [
    ['master', '--training-data', 'x.csv', '--data-reader-params', '{'],
    // JSON.parse's own words in the parentheses differ between Node.js versions (20: "at position 1",
    // 24: "... (line 1 column 2)"): the line is checked up to them.
    /^edl master: Expected a JSON object for --data-reader-params but received '\{' \(Expected property name or '\}' in JSON at position 1( \(line 1 column 2\))?\)$/,
  ],
  [
    ['master', '--training-data', 'x.csv', '--learning-rate', 'fast'],
    "edl master: Expected a number for --learning-rate but received 'fast'",
  ],
  [
    ['master', '--training-data', 'x.csv', '--job-type', 'tuning'],
    "edl master: Expected one of training, training-with-evaluation, evaluation, prediction for --job-type but received 'tuning'",
  ],
  [
    ['master', 'scale', 'many'],
    "edl master: Expected an integer in [0, 10000] for N (workers) but received 'many'",
  ],
  [
    ['worker', '--model-def', 'census', '--training-data', 't.csv', '--minibatch-size', 'abc'],
    "edl worker: Expected an integer >= 1 for --minibatch-size but received 'abc'",
  ],
  [
    ['worker', '--model-def', 'census', '--training-data', 't.csv', '--data-reader-params', 'nope'],
    "edl worker: Expected a JSON object for --data-reader-params but received 'nope' (Unexpected token 'o', \"nope\" is not valid JSON)",
  ],
  [['worker', '--model-def', 'census', '--bogus'], "edl worker: Unknown option '--bogus'"],
  [['demo', '--num-workers', '0'], "edl demo: Expected an integer >= 1 for --num-workers but received '0'"],
  [['demo', '--records', '1e3'], "edl demo: Expected an integer >= 1 for --records but received '1e3'"],
  [
    ['recordio', 'write', 'o.rio', '--gzip-level', '10'],
    "edl recordio: Expected an integer in [1, 9] for --gzip-level but received '10'",
  ],
  [
    ['k8s', 'manifest', '--image', 'i', '--port', '0', ...TRAIN],
    "edl k8s: Expected an integer in [1, 65535] for --port but received '0'",
  ],
  [
    ['k8s', 'logs', 'job', '--tail', 'x'],
    "edl k8s: Expected a non-negative integer for --tail but received 'x'",
  ],
  [['k8s', 'status'], 'edl k8s: missing the job name'],
];

describe('usage errors: one line, then the usage, exit status 2', () => {
  it.each(cases)('%j', async (argv, message) => {
    const saved = { ...process.env };
    Object.assign(process.env, workerEnv);
    try {
      const run = await runInProcess(argv);
      expect(run.code, run.err).toBe(2);
      const [first, second, ...rest] = run.err.split('\n');
      if (message instanceof RegExp) expect(first).toMatch(message);
      else expect(first).toBe(message);
      expect(second).toMatch(new RegExp(`^Usage: edl ${argv[0]}\\b`));
      expect(rest.join('\n')).not.toMatch(/^\s+at /m);
      expect(run.out).toBe('');
    } finally {
      process.env = saved;
    }
  });
});

describe('usage errors load nothing heavy', () => {
  // Spawned: the import hooks see every package the process resolves.
  it.each([
    [['train', '--model-def', 'census', '--training-data', 't.csv', '--bogus']],
    [['evaluate', '--model-def', 'census', '--validation-data', 'v.csv']],
    [['master', '--training-data', 'x.csv', '--port', '99999']],
    [['worker', '--model-def', 'census', '--training-data', 't.csv', '--minibatch-size', 'abc']],
    [['demo', '--num-workers', '0']],
    [['k8s', 'manifest', '--image', 'i', '--num-workers', 'x', ...TRAIN]],
    [['k8s', 'status', 'job', '--namespace', 'Not_DNS']],
  ])('%j', (argv) => {
    if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
    const dir = mkdtempSync(path.join(tmpdir(), 'edl-usage-'));
    const log = path.join(dir, 'imports.log');
    try {
      const run = spawnSync(process.execPath, ['--import', hooks, edl, ...argv], {
        cwd: dir,
        env: { ...process.env, ...workerEnv, EDL_IMPORT_LOG: log },
        encoding: 'utf8',
      });
      expect(run.status, run.stderr).toBe(2);
      expect(run.stderr.split('\n')[0]).toMatch(new RegExp(`^edl ${argv[0]}: `));
      expect(run.stderr.split('\n')[1]).toMatch(new RegExp(`^Usage: edl ${argv[0]}\\b`));
      expect(existsSync(log) ? readFileSync(log, 'utf8') : '').toBe('');
      // edl demo checks its options before it generates any data.
      expect(run.stderr).not.toContain('generating');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the hooks do see the heavy packages of a command that gets past its arguments', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'edl-usage-'));
    const log = path.join(dir, 'imports.log');
    try {
      // Valid arguments; the model definition file is missing, so it fails (exit 1) after loading.
      const run = spawnSync(
        process.execPath,
        ['--import', hooks, edl, 'train', '--model-def', 'missing.ts', '--training-data', 't.csv'],
        { cwd: dir, env: { ...process.env, EDL_IMPORT_LOG: log }, encoding: 'utf8' },
      );
      expect(run.status, run.stderr).toBe(1);
      expect(readFileSync(log, 'utf8')).toContain('@edl/master');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('edl --version', () => {
  it("prints the package's version", () => {
    const run = spawnSync(process.execPath, [edl, '--version'], { encoding: 'utf8' });
    const { version } = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(`edl ${version}\n`);
  });
});

describe('the lists checked without loading their packages stay in step with them', () => {
  it('--backend and --job-type', () => {
    expect(BACKEND_CHOICES).toEqual(['auto', ...BACKEND_ORDER]);
    expect([...MASTER_JOB_TYPES]).toEqual([...JOB_TYPES]);
  });
});

describe('--max-task-failures', () => {
  it('defaults to 3 and reaches the job options', () => {
    expect(parseJobOptions(['--model-def', 'm']).maxTaskFailures).toBe(3);
    expect(parseJobOptions(['--model-def', 'm', '--max-task-failures', '7']).maxTaskFailures).toBe(7);
  });
});
