import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, programsMissingFromPath, stopProcess } from './local-programs.js';
import { type S3Admin, s3Admin } from './s3-admin.js';

const run = promisify(execFile);

/** The Debian packages (Ceph 16.2 in bookworm) whose programs the fixture runs. */
export const RADOSGW_APT_PACKAGES = ['radosgw', 'ceph-mon', 'ceph-osd'] as const;
const PROGRAMS = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'ceph-authtool', 'monmaptool'];

/** The key pair of the radosgw user the fixture creates; the gateway checks SigV4 signatures with it. */
export const RADOSGW_CREDENTIALS = { accessKeyId: 'EDLTESTKEY', secretAccessKey: 'edl-test-secret' } as const;

/** A one-node Ceph cluster (a monitor, a memstore OSD) and radosgw, on 127.0.0.1, in a temp folder. */
export interface RadosgwProcess extends S3Admin {
  /** `http://127.0.0.1:<port>` (radosgw's beast frontend). */
  readonly endpoint: string;
  /** `radosgw --version`'s first line. */
  readonly version: string;
  /** Milliseconds from the first command to the gateway answering with the user created. */
  readonly startMs: number;
  /** Resident memory of the three daemons together now, in bytes (from /proc). */
  residentBytes(): Promise<number>;
  /** Stops the daemons and removes the folder. */
  stop(): Promise<void>;
}

/**
 * Why radosgw cannot be started here (a program missing from PATH), or `undefined` when it can.
 * Install with `apt-get install --no-install-recommends radosgw ceph-mon ceph-osd` (scripts/bootstrap.sh).
 */
export function radosgwMissing(): string | undefined {
  const missing = programsMissingFromPath(PROGRAMS);
  return missing.length === 0
    ? undefined
    : `${missing.join(', ')} not on PATH: install the Debian packages ${RADOSGW_APT_PACKAGES.join(' ')}`;
}

/**
 * Starts a one-node Ceph cluster with radosgw, as small as Ceph allows: no authentication between
 * the daemons (`auth * required = none`; the S3 gateway still checks SigV4 against its users), a
 * monitor speaking msgr v1 only, one OSD keeping objects in memory (`memstore`, 256 MiB device),
 * pools of one replica and 8 placement groups, no manager (radosgw does not need one). The daemons
 * run in the foreground as children of this process, so `stop` (or this process's exit) ends them.
 */
export async function startRadosgw(): Promise<RadosgwProcess> {
  const missing = radosgwMissing();
  if (missing !== undefined) throw new Error(`radosgw cannot start: ${missing}`);
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'edl-radosgw-'));
  const children: ChildProcess[] = [];
  try {
    const [monPort, rgwPort] = [await freePort(), await freePort()];
    const conf = join(dir, 'ceph.conf');
    const fsid = randomUUID();
    await mkdir(join(dir, 'osd', '0'), { recursive: true });
    await mkdir(join(dir, 'log'));
    await mkdir(join(dir, 'run'));
    await mkdir(join(dir, 'mon'));
    await writeFile(conf, cephConf(dir, fsid, monPort, rgwPort));
    const c = ['-c', conf];
    await run('ceph-authtool', [
      '--create-keyring',
      join(dir, 'keyring'),
      '--gen-key',
      '-n',
      'mon.',
      '--cap',
      'mon',
      'allow *',
    ]);
    await run('monmaptool', [
      '--create',
      '--addv',
      'a',
      `v1:127.0.0.1:${monPort}`,
      '--fsid',
      fsid,
      join(dir, 'monmap'),
    ]);
    await run('ceph-mon', [
      ...c,
      '--mkfs',
      '-i',
      'a',
      '--monmap',
      join(dir, 'monmap'),
      '--keyring',
      join(dir, 'keyring'),
    ]);
    children.push(daemon('ceph-mon', [...c, '-f', '-i', 'a']));
    await cephCommand([...c, '--connect-timeout', '60', 'osd', 'create']);
    await run('ceph-osd', [...c, '-i', '0', '--mkfs']);
    children.push(daemon('ceph-osd', [...c, '-f', '-i', '0']));
    await cephCommand([...c, 'osd', 'crush', 'add', 'osd.0', '1.0', 'host=localhost', 'root=default']);
    children.push(daemon('radosgw', [...c, '-f', '-n', 'client.rgw']));
    const endpoint = `http://127.0.0.1:${rgwPort}`;
    await waitForGateway(endpoint, children, 120_000);
    await run('radosgw-admin', [
      ...c,
      'user',
      'create',
      '--uid=edl',
      '--display-name=elasticdl-ts tests',
      `--access-key=${RADOSGW_CREDENTIALS.accessKeyId}`,
      `--secret-key=${RADOSGW_CREDENTIALS.secretAccessKey}`,
    ]);
    const version = (await run('radosgw', ['--version'])).stdout.split('\n')[0] ?? '';
    const startMs = performance.now() - started;
    const admin = s3Admin(endpoint, RADOSGW_CREDENTIALS);
    return {
      ...admin,
      endpoint,
      version,
      startMs,
      residentBytes: () => residentBytes(children),
      async stop() {
        admin.admin.destroy();
        await stopAll(children);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await stopAll(children);
    const logs = await logTails(join(dir, 'log'));
    await rm(dir, { recursive: true, force: true });
    throw new Error(`radosgw did not start: ${(error as Error).message}${logs}`);
  }
}

/** The last lines of each daemon's log, for an error saying why the cluster did not start. */
async function logTails(logDir: string): Promise<string> {
  const names = await readdir(logDir).catch(() => []);
  let text = '';
  for (const name of names) {
    const lines = (await readFile(join(logDir, name), 'utf8').catch(() => '')).trimEnd().split('\n');
    text += `\n--- ${name}:\n${lines.slice(-15).join('\n')}`;
  }
  return text;
}

function cephConf(dir: string, fsid: string, monPort: number, rgwPort: number): string {
  return `[global]
fsid = ${fsid}
mon host = v1:127.0.0.1:${monPort}
ms bind msgr2 = false
auth cluster required = none
auth service required = none
auth client required = none
keyring = ${dir}/keyring
run dir = ${dir}/run
admin socket = ${dir}/run/$name.asok
log file = ${dir}/log/$name.log
mon data = ${dir}/mon/$id
osd data = ${dir}/osd/$id
osd objectstore = memstore
memstore device bytes = 268435456
osd memory target = 268435456
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
osd crush update on start = false
osd class update on start = false
mon allow pool size one = true
mon warn on pool no redundancy = false
mon max pg per osd = 1000
[client.rgw]
rgw data = ${dir}/rgw
rgw frontends = beast endpoint=127.0.0.1:${rgwPort}
`;
}

/**
 * Runs a `ceph` CLI command, again up to 4 times on failure. Without cephx a client can send its
 * first command before it has the monitor map, and the monitor refuses it ("wrong fsid", EPERM);
 * for the same reason the OSD is told not to send commands of its own as it starts (`osd crush
 * update on start`, `osd class update on start`), and is put in the CRUSH map from here.
 */
async function cephCommand(args: readonly string[]): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await run('ceph', [...args]);
      return;
    } catch (error) {
      if (attempt === 5) throw error;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
  }
}

/** A daemon in the foreground; the end of its stderr is kept for the error if it exits early. */
function daemon(program: string, args: string[]): ChildProcess {
  const child = spawn(program, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  stderrOf.set(child, () => stderr);
  return child;
}

const stderrOf = new WeakMap<ChildProcess, () => string>();

/** Polls the gateway until it answers HTTP (an anonymous ListBuckets), or a daemon exits. */
async function waitForGateway(
  endpoint: string,
  children: readonly ChildProcess[],
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exited = children.find((child) => child.exitCode !== null || child.signalCode !== null);
    if (exited !== undefined)
      throw new Error(`${exited.spawnfile} exited (${exited.exitCode ?? exited.signalCode})`);
    const answered = await fetch(endpoint).then(
      (response) => response.ok,
      () => false,
    );
    if (answered) return;
    if (Date.now() > deadline) throw new Error(`no answer from ${endpoint} within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

async function stopAll(children: readonly ChildProcess[]): Promise<void> {
  // The gateway first, the monitor last, as the daemons depend on each other.
  for (const child of [...children].reverse()) await stopProcess(child);
}

async function residentBytes(children: readonly ChildProcess[]): Promise<number> {
  let total = 0;
  for (const child of children) {
    const status = await readFile(`/proc/${child.pid}/status`, 'utf8').catch(() => '');
    total += Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1] ?? 0) * 1024;
  }
  return total;
}
