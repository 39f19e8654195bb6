import { execFileSync } from 'node:child_process';
import { once } from 'node:events';
import { type AddressInfo, createServer } from 'node:net';
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

/** A loopback port free now: the kernel's pick for a server that closes at once. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  return port;
}
