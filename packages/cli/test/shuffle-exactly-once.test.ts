/**
 * Exactly-once per record with a shuffle buffer under SIGKILL (issue 26 item 0), in real `edl train`
 * processes: the identity model's weights count, per record, the applied gradients that held it, so
 * the final checkpoint shows which records were trained and how often, not just how many. A worker
 * killed mid-task leaves a task that is re-issued from a position inside a shuffle window.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadLatestCheckpoint } from '@edl/master';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EDL_BIN, killWorkerAfter, runEdl } from './helpers/run-edl.js';

const identityModel = fileURLToPath(new URL('./fixtures/identity-model.mjs', import.meta.url));
// The fixture's defaults: 480 records, shuffled in windows of 20 within tasks of 6 x 8 = 48.
const RECORDS = 480;
const EPOCHS = 2;

let dir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-shuffle-once-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('exactly-once with a shuffle buffer in edl train', () => {
  it('trains every record exactly once per epoch while a worker is SIGKILLed mid-task', async () => {
    const checkpoints = path.join(dir, 'checkpoints');
    const kill = killWorkerAfter('worker-1', 100);
    const run = await runEdl(
      [
        'train',
        '--model-def',
        identityModel,
        '--training-data',
        `synthetic:${RECORDS}`,
        '--backend',
        'cpu',
        '--minibatch-size',
        '8',
        '--num-minibatches-per-task',
        '6',
        '--num-workers',
        '2',
        '--num-epochs',
        String(EPOCHS),
        '--checkpoint-dir',
        checkpoints,
      ],
      dir,
      kill.onLine,
    );
    expect(kill.killed(), run.stderr.slice(-2000)).toBeDefined();
    expect(run.code, run.stderr.slice(-3000)).toBe(0);
    expect(run.stderr).toMatch(/recovered \d+ task\(s\) of worker-1/);
    const latest = await loadLatestCheckpoint(checkpoints);
    const weights = latest?.checkpoint.store.variables[0]?.values;
    expect(weights?.length).toBe(RECORDS);
    // Weight i is minus the times record i was in an applied gradient: EPOCHS for every record.
    const wrong = Array.from(weights ?? [], (w, id) => [id, -w] as const).filter(([, n]) => n !== EPOCHS);
    expect(wrong.slice(0, 10)).toEqual([]);
  }, 240_000);
});
