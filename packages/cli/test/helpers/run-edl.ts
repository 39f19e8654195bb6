import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The built CLI (`pnpm build`). */
export const EDL_BIN = fileURLToPath(new URL('../../dist/bin/edl.js', import.meta.url));

/** What a finished `edl` process printed. */
export interface EdlRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs the built `edl` with `args` in `cwd` and collects its output. */
export function runEdl(args: readonly string[], cwd?: string): Promise<EdlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EDL_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(cwd === undefined ? {} : { cwd }),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}
