import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCheckpoints, loadLatestCheckpoint } from '../src/checkpoint.js';
import { buildDist, repoRoot, sleep, waitFor } from './helpers.js';

const masterProcess = fileURLToPath(new URL('./fixtures/master-process.mjs', import.meta.url));
const checkpointDir = mkdtempSync(join(tmpdir(), 'edl-master-restart-'));
const RECORDS = 600;
const config = {
  shards: [
    { name: 'a', start: 0, count: 400 },
    { name: 'b', start: 400, count: 200 },
  ],
  records: RECORDS,
  epochs: 2,
  checkpointDir,
  checkpointSteps: 5,
  stepDelayMs: 15,
};

beforeAll(() => buildDist(['-b packages/proto', '-p packages/master/tsconfig.json']), 180_000);
afterAll(() => rmSync(checkpointDir, { recursive: true, force: true }));

function runMaster(): {
  child: ChildProcess;
  stdout: string[];
  stderr: string[];
  exited: Promise<number | null>;
} {
  const child = spawn(process.execPath, [masterProcess, JSON.stringify(config)], {
    cwd: repoRoot,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  const stderr: string[] = [];
  createInterface({ input: child.stdout! }).on('line', (l) => stdout.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return { child, stdout, stderr, exited };
}

describe('master restart', () => {
  it('resumes a job from its checkpoint after the master is SIGKILLed, training each record once per epoch', async () => {
    const first = runMaster();
    // Let it get well into the first epoch (several checkpoints), then kill it without warning.
    await waitFor(
      () => first.stdout.some((l) => l.startsWith('LISTENING')),
      'the first master to listen',
      30_000,
    );
    let versions: number[] = [];
    await waitFor(
      () => {
        listCheckpoints(checkpointDir).then((v) => {
          versions = v;
        });
        return (versions.at(-1) ?? 0) >= 20;
      },
      'a checkpoint at version 20',
      60_000,
    );
    first.child.kill('SIGKILL');
    await first.exited;
    const saved = await loadLatestCheckpoint(checkpointDir);
    const savedVersion = saved!.checkpoint.store.version;
    expect(savedVersion).toBeGreaterThanOrEqual(20);
    expect(savedVersion).toBeLessThan((RECORDS * config.epochs) / 10);
    // Workers of the dead master notice and leave.
    await sleep(500);

    const second = runMaster();
    const code = await second.exited;
    expect(code).toBe(0);
    expect(
      second.stderr.some(
        (l) => l.includes('resumed from checkpoint') && l.includes(`"modelVersion":${savedVersion}`),
      ),
    ).toBe(true);
    const result = JSON.parse(second.stdout.find((l) => l.startsWith('RESULT '))!.slice(7));
    expect(result.state).toBe('succeeded');
    // One version per 10-record minibatch, across both runs: no range was lost or applied twice.
    expect(result.modelVersion).toBe((RECORDS * config.epochs) / 10);
    expect([result.countsMin, result.countsMax]).toEqual([config.epochs, config.epochs]);
  }, 180_000);
});
