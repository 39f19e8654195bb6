import type { ChildProcess } from 'node:child_process';

/** How a child process ended, for logs and errors: `exited with code 1`, `exited with signal SIGKILL`. */
export type ChildExit = {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly spawnError: Error | undefined;
  /** The words for it. */
  readonly how: string;
};

/**
 * Resolves when `child` has closed (its output read to the end) and tells `onExit` how it ended;
 * a spawn failure (no such executable) counts as its end.
 */
export function watchChildExit(child: ChildProcess, onExit: (exit: ChildExit) => void): Promise<void> {
  return new Promise<void>((resolve) => {
    let spawnError: Error | undefined;
    child.on('error', (error) => {
      spawnError = error;
    });
    child.on('close', (code, signal) => {
      resolve();
      const how = spawnError
        ? `could not start: ${spawnError.message}`
        : signal !== null
          ? `exited with signal ${signal}`
          : `exited with code ${code}`;
      onExit({ code, signal, spawnError, how });
    });
  });
}

/** Stops `child`: SIGTERM, then SIGKILL if it has not closed (`exited`) within `graceMs`. */
export async function stopChild(
  child: ChildProcess,
  exited: Promise<void> | undefined,
  graceMs: number,
): Promise<void> {
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}
