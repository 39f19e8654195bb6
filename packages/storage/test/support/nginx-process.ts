import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, programsMissingFromPath, stopProcess } from './local-programs.js';
import { makeCertificates } from './test-ca.js';

const run = promisify(execFile);

/** The Debian package whose program the fixture runs (scripts/bootstrap.sh installs it). */
export const NGINX_APT_PACKAGE = 'nginx';

/** One request as nginx logged it (the fixture's JSON `log_format`). */
export interface NginxLoggedRequest {
  readonly method: string;
  /** The path asked for, without the query. */
  readonly uri: string;
  readonly status: number;
  /** The request's `Range` header, `''` when it sent none. */
  readonly range: string;
  /** The request's `If-Match` header, `''` when it sent none. */
  readonly ifMatch: string;
  /** Bytes of the answer's body nginx sent. */
  readonly bodyBytes: number;
}

/** nginx serving a temp folder of static files over HTTPS on 127.0.0.1, with a test CA's certificate. */
export interface NginxProcess {
  /** `https://127.0.0.1:<port>`. */
  readonly origin: string;
  /** `nginx -v`'s line, e.g. `nginx version: nginx/1.22.1`. */
  readonly version: string;
  /** The folder nginx serves at `/`: files written here are its objects. */
  readonly root: string;
  /** The test CA's certificate (PEM), for NODE_EXTRA_CA_CERTS. */
  readonly caFile: string;
  /** Every request logged so far, oldest first. */
  requests(): Promise<NginxLoggedRequest[]>;
  /** Stops nginx and removes its folder. */
  stop(): Promise<void>;
}

/**
 * Why nginx cannot be started here (not on PATH), or `undefined` when it can. Install with
 * `apt-get install --no-install-recommends nginx` (scripts/bootstrap.sh).
 */
export function nginxMissing(): string | undefined {
  return programsMissingFromPath(['nginx']).length === 0
    ? undefined
    : `nginx not on PATH: install the Debian package ${NGINX_APT_PACKAGE}`;
}

/**
 * Starts nginx as the current user, with nothing of the system's: a temp prefix folder with its
 * own nginx.conf (`-p`, `-c`, and `-e` so that not even the first error goes to /var/log), in the
 * foreground as one process (`daemon off`, `master_process off`), its pid file, logs and temp
 * paths in the folder. It serves the folder's `html/` over TLS with a certificate of a new test CA
 * for 127.0.0.1, on a free port. Range, ETag, If-Match and Last-Modified are nginx's own handling
 * of static files; the access log records each request's Range and If-Match as JSON lines.
 */
export async function startNginx(): Promise<NginxProcess> {
  const missing = nginxMissing();
  if (missing !== undefined) throw new Error(`nginx cannot start: ${missing}`);
  const dir = await mkdtemp(join(tmpdir(), 'edl-nginx-'));
  let child: ChildProcess | undefined;
  try {
    for (const sub of ['html', 'logs', 'tmp', 'tls']) await mkdir(join(dir, sub));
    const certificates = await makeCertificates(join(dir, 'tls'));
    await writeFile(join(dir, 'tls', 'nginx.key'), certificates.key, { mode: 0o600 });
    await writeFile(join(dir, 'tls', 'nginx.pem'), certificates.cert);
    const port = await freePort();
    await writeFile(join(dir, 'nginx.conf'), nginxConf(dir, port));
    const version = (await run('nginx', ['-v'])).stderr.trim();
    const started = spawn(
      'nginx',
      ['-p', dir, '-c', join(dir, 'nginx.conf'), '-e', join(dir, 'logs', 'error.log')],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    child = started;
    await waitForPort(started, port, 20_000);
    const accessLog = join(dir, 'logs', 'access.log');
    return {
      origin: `https://127.0.0.1:${port}`,
      version,
      root: join(dir, 'html'),
      caFile: certificates.caFile,
      async requests() {
        const text = await readFile(accessLog, 'utf8').catch(() => '');
        return text
          .split('\n')
          .filter((line) => line !== '')
          .map((line) => JSON.parse(line) as NginxLoggedRequest);
      },
      async stop() {
        await stopProcess(started);
        await rm(dir, { recursive: true, force: true });
      },
    };
  } catch (error) {
    if (child !== undefined) await stopProcess(child);
    const log = await readFile(join(dir, 'logs', 'error.log'), 'utf8').catch(() => '');
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `nginx did not start: ${(error as Error).message}\n${log.trimEnd().split('\n').slice(-10).join('\n')}`,
    );
  }
}

function nginxConf(dir: string, port: number): string {
  const temp = (name: string): string => join(dir, 'tmp', name);
  return `daemon off;
master_process off;
pid ${join(dir, 'nginx.pid')};
error_log ${join(dir, 'logs', 'error.log')} notice;
events { worker_connections 256; }
http {
  default_type application/octet-stream;
  log_format edl escape=json '{"method":"$request_method","uri":"$uri","status":$status,'
    '"range":"$http_range","ifMatch":"$http_if_match","bodyBytes":$body_bytes_sent}';
  access_log ${join(dir, 'logs', 'access.log')} edl;
  client_body_temp_path ${temp('body')};
  proxy_temp_path ${temp('proxy')};
  fastcgi_temp_path ${temp('fastcgi')};
  uwsgi_temp_path ${temp('uwsgi')};
  scgi_temp_path ${temp('scgi')};
  server {
    listen 127.0.0.1:${port} ssl;
    ssl_certificate ${join(dir, 'tls', 'nginx.pem')};
    ssl_certificate_key ${join(dir, 'tls', 'nginx.key')};
    root ${join(dir, 'html')};
  }
}
`;
}

/** Resolves once `port` accepts connections; rejects if `child` exits first or time runs out. */
async function waitForPort(child: ChildProcess, port: number, timeoutMs: number): Promise<void> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-4000);
  });
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`nginx exited (${child.exitCode ?? child.signalCode}): ${stderr.trim()}`);
    }
    const accepted = await new Promise<boolean>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => resolve(false));
    });
    if (accepted) return;
    if (Date.now() > deadline)
      throw new Error(`nginx did not listen on port ${port} within ${timeoutMs / 1000} s`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}
