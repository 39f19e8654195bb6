import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MasterRpcError } from '@edl/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MasterConnection } from '../src/master-connection.js';
import { MASTER_GONE_EXIT_CODE, MasterWatch } from '../src/master-watch.js';

const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
const child = fileURLToPath(new URL('./fixtures/watched-child.mjs', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'edl-watch-'));

// The child process imports the built module.
beforeAll(() => {
  execFileSync('pnpm', ['exec', 'tsc', '-b', 'packages/worker'], { cwd: repoRoot, stdio: 'pipe' });
}, 180_000);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** A master connection whose heartbeat fails while `down` is set. */
function connection(state: { down: boolean }): MasterConnection {
  const heartbeat = async () => {
    if (state.down) throw new MasterRpcError('heartbeat', 14, 'connection refused');
    return { shouldStop: false, modelVersion: 0 };
  };
  return { heartbeat } as unknown as MasterConnection;
}

describe('MasterWatch', () => {
  it('ends the worker once calls have failed for a lease, and not while they succeed', async () => {
    let now = 0;
    const gone: string[] = [];
    const state = { down: false };
    const watch = new MasterWatch({
      leaseMs: 1_000,
      checkMs: 60_000,
      now: () => now,
      onGone: (r) => gone.push(r),
    });
    const master = watch.wrap(connection(state));
    try {
      await master.heartbeat('w');
      now += 5_000;
      // A long pause without calls (a slow step) is no failure.
      expect(watch.check()).toBe(false);
      state.down = true;
      await expect(master.heartbeat('w')).rejects.toThrow();
      now += 900;
      await expect(master.heartbeat('w')).rejects.toThrow();
      expect(watch.check()).toBe(false);
      // One success renews the lease.
      state.down = false;
      await master.heartbeat('w');
      state.down = true;
      now += 200;
      await expect(master.heartbeat('w')).rejects.toThrow();
      now += 999;
      expect(watch.check()).toBe(false);
      now += 1;
      expect(watch.check()).toBe(true);
      expect(gone).toEqual(['calls to the master have failed for 1000 ms (lease 1000 ms)']);
      expect(watch.check()).toBe(true);
      expect(gone).toHaveLength(1);
    } finally {
      watch.stop();
    }
  });

  it('checks its options and its environment', () => {
    expect(MasterWatch.fromEnvironment({})).toBeUndefined();
    expect(() => MasterWatch.fromEnvironment({ EDL_MASTER_PID: 'x' })).toThrow(
      new RangeError('Expected a positive integer for EDL_MASTER_PID but received "x"'),
    );
    expect(() => new MasterWatch({ leaseMs: 0 })).toThrow(
      new RangeError('Expected a positive integer for leaseMs but received 0'),
    );
    const watch = MasterWatch.fromEnvironment({
      EDL_MASTER_PID: String(process.pid),
      EDL_MASTER_LEASE_MS: '5000',
    });
    expect(watch).toBeInstanceOf(MasterWatch);
    expect(watch?.check()).toBe(false);
    watch?.stop();
  });

  it('ends a local worker process soon after its master process is SIGKILLed', async () => {
    const marker = join(dir, 'exit-code');
    // The "master": a process that starts the worker and then just waits.
    const master = spawn(
      process.execPath,
      [
        '-e',
        `const c = require('node:child_process').spawn(process.execPath, [${JSON.stringify(child)}, ${JSON.stringify(marker)}], { stdio: ['ignore', 'inherit', 'inherit'] });
         setInterval(() => {}, 1000);`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const workerPid = await new Promise<number>((resolve, reject) => {
      master.stdout.on('data', (chunk: Buffer) => {
        const m = /ready (\d+)/.exec(chunk.toString());
        if (m) resolve(Number(m[1]));
      });
      master.on('exit', () => reject(new Error('the master process ended early')));
    });
    try {
      await sleep(200);
      expect(alive(workerPid)).toBe(true);
      master.kill('SIGKILL');
      for (let i = 0; i < 200 && alive(workerPid); i++) await sleep(50);
      expect(alive(workerPid)).toBe(false);
      expect(existsSync(marker)).toBe(true);
      expect(readFileSync(marker, 'utf8')).toBe(String(MASTER_GONE_EXIT_CODE));
    } finally {
      if (alive(workerPid)) process.kill(workerPid, 'SIGKILL');
      if (alive(master.pid!)) master.kill('SIGKILL');
    }
  }, 30_000);
});
