import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';

/** The programs of `programs` that no folder of PATH holds. */
export function programsMissingFromPath(programs: readonly string[]): string[] {
  const path = (process.env.PATH ?? '').split(delimiter);
  return programs.filter((program) => !path.some((dir) => existsSync(join(dir, program))));
}

/** A port of 127.0.0.1 free now (bound, then released). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('no port');
  return address.port;
}

/** Ends `child` (SIGTERM, SIGKILL after 10 s) and waits for its exit; at once if it has exited. */
export async function stopProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}
