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

/**
 * Runs the built `edl` with `args` in `cwd` and collects its output; `onStderrLine` sees each line
 * of stderr as it comes (e.g. to kill a worker once it reports progress). `env` replaces this
 * process's environment (e.g. an object store's settings).
 */
export function runEdl(
  args: readonly string[],
  cwd?: string,
  onStderrLine?: (line: string) => void,
  env?: NodeJS.ProcessEnv,
): Promise<EdlRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [EDL_BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(cwd === undefined ? {} : { cwd }),
      ...(env === undefined ? {} : { env }),
    });
    let stdout = '';
    let stderr = '';
    let partial = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      stderr += text;
      if (onStderrLine === undefined) return;
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) onStderrLine(line);
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * A stderr line watcher for {@link runEdl} that SIGKILLs worker `workerId` once it reports progress
 * past `records` records; `killed()` is the pid it killed, if any.
 */
export function killWorkerAfter(workerId: string, records: number) {
  let pid: number | undefined;
  return {
    onLine(line: string): void {
      if (pid !== undefined || !line.startsWith('{')) return;
      const event = JSON.parse(line) as { msg?: string; records?: number; pid?: number; worker?: string };
      if (event.msg !== 'progress' || event.worker !== workerId || (event.records ?? 0) < records) return;
      if (event.pid === undefined) return;
      pid = event.pid;
      process.kill(pid, 'SIGKILL');
    },
    killed: (): number | undefined => pid,
  };
}
