/**
 * Starts a throw-away PostgreSQL server for the table reader tests: initdb into a fresh temporary
 * directory, trust authentication, a free TCP port on 127.0.0.1 and a private unix-socket
 * directory. PostgreSQL refuses to run as root, so as root the binaries run as the `postgres` user
 * (`runuser`), with the directory handed to that user. Missing binaries are an error, never a skip:
 * CI installs the Debian `postgresql` package.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { chown, mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** A running server and how to reach and stop it. */
export interface TestPostgres {
  /** `postgresql://postgres@127.0.0.1:<port>/postgres`. */
  readonly connectionString: string;
  readonly port: number;
  /** Stops the server (immediate mode) and removes its directory. */
  stop(): Promise<void>;
}

/** Finds initdb/pg_ctl: $EDL_PG_BIN, then the newest /usr/lib/postgresql/<version>/bin, then PATH. */
function findBinDir(): string {
  const fromEnv = process.env.EDL_PG_BIN;
  if (fromEnv !== undefined && fromEnv !== '') {
    if (!existsSync(join(fromEnv, 'initdb'))) throw new Error(`EDL_PG_BIN=${fromEnv} holds no initdb`);
    return fromEnv;
  }
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root)
      .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
      .sort((a, b) => Number(b) - Number(a));
    if (versions[0] !== undefined) return join(root, versions[0], 'bin');
  }
  for (const dir of (process.env.PATH ?? '').split(':')) {
    if (dir !== '' && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir;
  }
  throw new Error(
    'PostgreSQL server binaries (initdb, pg_ctl) not found: install the Debian package `postgresql` ' +
      '(apt-get install -y postgresql) or set EDL_PG_BIN to the directory holding them. ' +
      'The table reader tests need a real server and do not skip.',
  );
}

async function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** Starts a server; call `stop()` in teardown. */
export async function startPostgres(): Promise<TestPostgres> {
  const bin = findBinDir();
  const asRoot = process.getuid?.() === 0;
  const dir = await mkdtemp(join(tmpdir(), 'edl-pg-'));
  const dataDir = join(dir, 'data');
  const socketDir = dir;
  const logFile = join(dir, 'server.log');
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres']).catch(() => {
      throw new Error('running as root, but there is no `postgres` user to run the server as');
    });
    const { stdout: gid } = await run('id', ['-g', 'postgres']);
    await chown(dir, Number(stdout.trim()), Number(gid.trim()));
  }
  const exec = (tool: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(bin, tool), ...args]) : run(join(bin, tool), args);
  const port = await freePort();
  try {
    await exec('initdb', [
      '-D',
      dataDir,
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--no-locale',
      '--no-sync',
    ]);
    await exec('pg_ctl', [
      '-D',
      dataDir,
      '-l',
      logFile,
      '-w',
      '-t',
      '60',
      '-o',
      `-p ${port} -k ${socketDir} -c listen_addresses=127.0.0.1 -F`,
      'start',
    ]);
  } catch (error) {
    const log = await readFile(logFile, 'utf8').catch(() => '');
    await rm(dir, { recursive: true, force: true });
    throw new Error(`could not start PostgreSQL from ${bin}: ${(error as Error).message}\n${log}`);
  }
  return {
    connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`,
    port,
    async stop() {
      try {
        await exec('pg_ctl', ['-D', dataDir, '-m', 'immediate', '-w', 'stop']);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },
  };
}
