import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../../../', import.meta.url));
export const simWorker = fileURLToPath(new URL('./fixtures/sim-worker.mjs', import.meta.url));

/** Processes spawned by tests import the built @edl/proto (and @edl/master): build them first. */
export function buildDist(projects: string[]): void {
  for (const project of projects) {
    execFileSync('pnpm', ['exec', 'tsc', ...project.split(' ')], { cwd: repoRoot, stdio: 'pipe' });
  }
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `condition` holds, failing after `timeoutMs` with `what`. */
export async function waitFor(condition: () => boolean, what: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}
