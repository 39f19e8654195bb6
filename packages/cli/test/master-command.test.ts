import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { readCheckpoint } from '@edl/master';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../src/main.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const simWorker = fileURLToPath(new URL('../../master/test/fixtures/sim-worker.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'edl-cli-master-'));

beforeAll(() => {
  // The simulated workers import the built @edl/proto and @edl/data.
  for (const project of ['packages/proto', 'packages/data']) {
    execFileSync('pnpm', ['exec', 'tsc', '-b', project], { cwd: repoRoot, stdio: 'pipe' });
  }
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function io() {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const out: string[] = [];
  const err: string[] = [];
  stdout.on('data', (d) => out.push(String(d)));
  stderr.on('data', (d) => err.push(String(d)));
  return { io: { stdout, stderr, stdin: new PassThrough(), isTTY: false }, out, err };
}

describe('edl master', () => {
  it('runs a training job over a CSV file with local workers, checkpoints it and prints the result', async () => {
    const csv = join(dir, 'train.csv');
    writeFileSync(csv, `x,y\n${Array.from({ length: 120 }, (_, i) => `${i},${i % 2}`).join('\n')}\n`);
    process.env.SIM_RECORDS = '120';
    // The workers read their tasks' rows through the real text reader; a row's id is its x.
    process.env.SIM_READER = JSON.stringify({ type: 'text', params: { path: csv, header: true } });
    const { io: cliIo, out, err } = io();
    const code = await runCli(
      [
        'master',
        '--training-data',
        csv,
        '--data-reader-params',
        '{"header":true}',
        '--minibatch-size',
        '10',
        '--num-minibatches-per-task',
        '2',
        '--num-epochs',
        '2',
        '--optimizer',
        'sgd',
        '--learning-rate',
        '1',
        '--checkpoint-dir',
        join(dir, 'ckpt'),
        '--num-workers',
        '2',
        '--worker-command',
        JSON.stringify([process.execPath, simWorker]),
      ],
      cliIo,
    );
    const stdout = out.join('');
    expect(err.join('')).toContain('job succeeded');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^EDL_MASTER_ADDR=127\.0\.0\.1:\d+\nEDL_JOB_TOKEN=[0-9a-f]{64}\n/);
    const result = JSON.parse(stdout.trim().split('\n').at(-1)!);
    expect(result).toMatchObject({
      state: 'succeeded',
      modelVersion: 24,
      records: {
        done: 240,
        total: 240,
        training: { done: 240, total: 240 },
        evaluation: { done: 0, total: 0 },
        prediction: { done: 0, total: 0 },
      },
    });
    expect(result.code).toBeUndefined();
    expect(readFileSync(result.checkpoint).subarray(0, 8).toString()).toBe('EDLCKPT1');
    // The final checkpoint's weights count the applications of each row: 2 epochs, once each.
    const checkpoint = await readCheckpoint(result.checkpoint);
    expect(checkpoint.store.version).toBe(24);
    expect([...new Set(checkpoint.store.variables[0]!.values)]).toEqual([2]);
  }, 60_000);

  it('prints the failure code in the final line and the log when workers keep crashing', async () => {
    const csv = join(dir, 'crash.csv');
    writeFileSync(csv, `x,y\n${Array.from({ length: 40 }, (_, i) => `${i},${i % 2}`).join('\n')}\n`);
    const { io: cliIo, out, err } = io();
    const code = await runCli(
      [
        'master',
        '--training-data',
        csv,
        '--data-reader-params',
        '{"header":true}',
        '--num-workers',
        '1',
        '--max-restarts',
        '1',
        '--worker-command',
        JSON.stringify([process.execPath, '-e', 'process.exit(7)']),
      ],
      cliIo,
    );
    expect(code).toBe(1);
    const result = JSON.parse(out.join('').trim().split('\n').at(-1)!);
    expect(result).toMatchObject({
      state: 'failed',
      code: 'WORKER_RESTARTS_EXHAUSTED',
      records: { done: 0, total: 40, training: { done: 0, total: 40 } },
    });
    expect(result.error).toMatch(/^Worker slot 0 ended 2 times, more than maxRestarts \(1\)/);
    // The master's log (JSON lines off a terminal) carries the failure's stable code.
    const failure = err
      .join('')
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level?: string; msg?: string; code?: string })
      .find((line) => line.msg?.startsWith('job failed'));
    expect(failure).toMatchObject({ level: 'error', code: 'WORKER_RESTARTS_EXHAUSTED' });
    expect(failure?.msg).toMatch(/^job failed: WORKER_RESTARTS_EXHAUSTED: Worker slot 0 ended 2 times/);
  }, 60_000);

  it('serves the live view; `edl master status` prints its /api/status', async () => {
    const csv = join(dir, 'status.csv');
    writeFileSync(csv, `x,y\n${Array.from({ length: 40 }, (_, i) => `${i},${i % 2}`).join('\n')}\n`);
    const master = io();
    // No local workers: the job waits for the one started below, after the status checks.
    const running = runCli(
      ['master', '--training-data', csv, '--data-reader-params', '{"header":true}', '--minibatch-size', '10'],
      master.io,
    );
    const env = await new Promise<Record<string, string>>((resolve) => {
      const check = () => {
        const text = master.out.join('');
        if (/EDL_MASTER_HTTP=.+\n/.test(text)) {
          resolve(
            Object.fromEntries(
              text
                .split('\n')
                .filter((l) => l.includes('='))
                .map((l) => l.split('=', 2)),
            ),
          );
        }
      };
      master.io.stdout.on('data', check);
      check();
    });
    expect(env.EDL_MASTER_HTTP).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(master.err.join('')).toContain(`live view: ${env.EDL_MASTER_HTTP}/?token=${env.EDL_JOB_TOKEN}`);
    const saved = { token: process.env.EDL_JOB_TOKEN, http: process.env.EDL_MASTER_HTTP };
    try {
      process.env.EDL_JOB_TOKEN = env.EDL_JOB_TOKEN;
      process.env.EDL_MASTER_HTTP = env.EDL_MASTER_HTTP;
      const status = io();
      expect(await runCli(['master', 'status'], status.io)).toBe(0);
      const snapshot = JSON.parse(status.out.join(''));
      expect(snapshot.job).toMatchObject({
        state: 'running',
        type: 'training',
        recordsTotal: 40,
        modelVersion: 0,
      });
      expect(snapshot.workers).toEqual([]);
      process.env.EDL_JOB_TOKEN = 'wrong';
      const refused = io();
      expect(await runCli(['master', 'status'], refused.io)).toBe(1);
      expect(refused.err.join('')).toContain(`${env.EDL_MASTER_HTTP}/api/status answered 401`);
    } finally {
      process.env.EDL_JOB_TOKEN = saved.token;
      if (saved.http === undefined) delete process.env.EDL_MASTER_HTTP;
      else process.env.EDL_MASTER_HTTP = saved.http;
      if (saved.token === undefined) delete process.env.EDL_JOB_TOKEN;
    }
    // One simulated worker finishes the job (asynchronously: the master runs in this process).
    await promisify(execFile)(process.execPath, [simWorker], {
      env: {
        ...process.env,
        EDL_MASTER_ADDR: env.EDL_MASTER_ADDR,
        EDL_JOB_TOKEN: env.EDL_JOB_TOKEN,
        EDL_WORKER_ID: 'worker-by-hand',
        SIM_RECORDS: '40',
        SIM_READER: JSON.stringify({ type: 'text', params: { path: csv, header: true } }),
      },
    });
    expect(await running).toBe(0);
  }, 60_000);

  it('exits once its job is over (the live view and every server closed)', async () => {
    const csv = join(dir, 'exit.csv');
    writeFileSync(csv, `x,y\n${Array.from({ length: 20 }, (_, i) => `${i},${i % 2}`).join('\n')}\n`);
    const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
    // A process that lingers after its job would hit the timeout and fail the call.
    const { stdout } = await promisify(execFile)(
      process.execPath,
      [
        edl,
        'master',
        '--training-data',
        csv,
        '--data-reader-params',
        '{"header":true}',
        '--num-workers',
        '1',
        '--worker-command',
        JSON.stringify([process.execPath, simWorker]),
      ],
      {
        timeout: 60_000,
        env: {
          ...process.env,
          SIM_RECORDS: '20',
          SIM_READER: JSON.stringify({ type: 'text', params: { path: csv, header: true } }),
        },
      },
    );
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!).state).toBe('succeeded');
  }, 90_000);

  it('refuses bad arguments with a usage error', async () => {
    const { io: cliIo, err } = io();
    expect(await runCli(['master', '--training-data', 'x.csv', '--mode', 'fast'], cliIo)).toBe(2);
    expect(err.join('')).toContain("edl master: Expected one of sync, async for --mode but received 'fast'");
    const second = io();
    expect(await runCli(['master'], second.io)).toBe(2);
    expect(second.err.join('')).toContain(
      'no data: give --training-data, --validation-data or --prediction-data',
    );
  });
});
