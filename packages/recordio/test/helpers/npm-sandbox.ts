// What the install tests share: a bare PATH with node, npm, npx and sh only (no compiler, no pnpm,
// no tool of this checkout), a private HOME, and runs that get no npm_config_* from the pnpm that
// runs the tests. prebuilt-install.test.ts installs from tarball files offline; the CLI's
// walkthrough test installs from a registry on 127.0.0.1 (../../../cli/test/helpers/local-registry.ts).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, realpathSync, symlinkSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';

/** What a finished process printed. */
export interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Where a sandbox runs things, and how. */
export interface NpmSandbox {
  /** The directory with node, npm, npx and sh: the whole PATH of `run` unless told otherwise. */
  readonly binDir: string;
  /** The private HOME (npm's user config and default cache would land here). */
  readonly home: string;
  /** Runs `command` in `cwd` with PATH `path`, HOME and `env` only, and waits for it. */
  run(command: string, args: readonly string[], cwd: string, path?: string, env?: Env): Run;
  /**
   * As `run`, without blocking this process: for commands that talk to a server that this
   * process serves (a blocked event loop would never answer them).
   */
  runAsync(command: string, args: readonly string[], cwd: string, env?: Env): Promise<Run>;
}

type Env = Readonly<Record<string, string>>;

const TIMEOUT_MS = 540_000;
const REPO_ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

/**
 * Lays out `scratch/bin` (node, npm, npx, sh) and `scratch/home`. `node` is the node that npm and
 * the installed packages run on: another target's node (a qemu-user wrapper) for cross tests.
 */
export function createNpmSandbox(scratch: string, node: string = process.execPath): NpmSandbox {
  const binDir = join(scratch, 'bin');
  const home = join(scratch, 'home');
  mkdirSync(binDir, { recursive: true });
  mkdirSync(home, { recursive: true });
  const npmBin = dirname(realpathSync(whichOnHostPath('npm')));
  symlinkSync(node, join(binDir, 'node'));
  symlinkSync(join(npmBin, 'npm-cli.js'), join(binDir, 'npm'));
  symlinkSync(join(npmBin, 'npx-cli.js'), join(binDir, 'npx'));
  symlinkSync('/bin/sh', join(binDir, 'sh')); // npx and npm scripts run through sh

  const environment = (path: string, env: Env) => ({ ...env, PATH: path, HOME: home });
  return {
    binDir,
    home,
    run(command, args, cwd, path = binDir, env = {}) {
      const result = spawnSync(command, args, {
        cwd,
        env: environment(path, env),
        encoding: 'utf8',
        timeout: TIMEOUT_MS,
      });
      if (result.error !== undefined) throw result.error;
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    },
    runAsync(command, args, cwd, env = {}) {
      return new Promise((resolve, reject) => {
        const child = spawn(command, args, {
          cwd,
          env: environment(binDir, env),
          stdio: ['ignore', 'pipe', 'pipe'],
          timeout: TIMEOUT_MS,
        });
        let stdout = '';
        let stderr = '';
        child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
          stdout += chunk;
        });
        child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
          stderr += chunk;
        });
        child.on('error', reject);
        child.on('close', (status) => resolve({ status, stdout, stderr }));
      });
    },
  };
}

/**
 * `tsc -b project`, since a tarball must carry the current TypeScript, then `pack:all` into
 * outDir (every workspace package and this host's platform package; `binaries` as its --binaries).
 * Runs with the environment of the tests (pnpm on PATH); throws, with the output, if either fails.
 */
export function packAll(outDir: string, project: string, binaries?: string): void {
  const steps: [string, string[]][] = [
    ['pnpm', ['exec', 'tsc', '-b', project]],
    [
      process.execPath,
      ['scripts/pack-all.mjs', '--out', outDir, ...(binaries === undefined ? [] : ['--binaries', binaries])],
    ],
  ];
  for (const [command, args] of steps) {
    const result = spawnSync(command, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: TIMEOUT_MS });
    if (result.error !== undefined) throw result.error;
    ok({ status: result.status, stdout: result.stdout, stderr: result.stderr }, [command, ...args].join(' '));
  }
}

/** Expects exit status 0, showing the output otherwise. */
export function ok(result: Run, what = ''): Run {
  expect(result.status, `${what}\n${result.stdout}\n${result.stderr}`).toBe(0);
  return result;
}

/** The first `name` on the PATH of the process that runs the tests. */
export function whichOnHostPath(name: string): string {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && existsSync(join(dir, name))) return join(dir, name);
  }
  throw new Error(`${name} is not on PATH`);
}
