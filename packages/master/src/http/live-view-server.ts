import { timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobStatusTracker } from '../job-status.js';
import type { JobMetrics } from './metrics.js';

/** Options of {@link serveLiveView}. */
export interface LiveViewOptions {
  /** Interface to listen on (default 127.0.0.1). */
  readonly host?: string;
  /** Port (default 0: a free one). */
  readonly port?: number;
  /** The job token: every request must carry it (query `token`, cookie, or `Authorization: Bearer`). */
  readonly token: string;
  /** A second token that opens `/metrics` only (for a Prometheus scrape config). */
  readonly metricsToken?: string;
  /** Period of the server-sent status events, in milliseconds (default 1000). */
  readonly pushMs?: number;
}

/** A running live view. */
export interface LiveViewServer {
  /** `http://host:port` */
  readonly origin: string;
  /** The page's address with the token, to print at start. */
  readonly url: string;
  readonly port: number;
  close(): Promise<void>;
}

const COOKIE = 'edl_token';
const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

/**
 * The page and its scripts: copied (with the vendored chart library) into dist/static at build
 * time. `../../dist/static` is the same folder from dist/http (the package) and from src/http
 * (tests running the sources).
 */
function staticDir(): string {
  return fileURLToPath(new URL('../../dist/static/', import.meta.url));
}

function sameToken(given: string | undefined, expected: string | undefined): boolean {
  if (given === undefined || expected === undefined || expected === '') return false;
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieToken(request: IncomingMessage): string | undefined {
  for (const part of (request.headers.cookie ?? '').split(';')) {
    const [name, ...value] = part.trim().split('=');
    if (name === COOKIE) return decodeURIComponent(value.join('='));
  }
  return undefined;
}

function bearerToken(request: IncomingMessage): string | undefined {
  const match = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
  return match?.[1]?.trim();
}

function send(response: ServerResponse, status: number, type: string, body: string | Buffer): void {
  response.writeHead(status, {
    'content-type': type,
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  response.end(body);
}

/**
 * Serves the live view of a job over HTTP: the page (`/`), its static files, `GET /api/status`
 * (the {@link JobStatusSnapshot} as JSON, with `storage`: object-storage totals per URL scheme, and `dataPipelines`: each worker's data pipeline tuner), `GET /api/events` (the same, pushed as server-sent
 * events) and `GET /metrics` (Prometheus text). Every request without the job token gets 401; the
 * page's first visit with `?token=` sets it as an HttpOnly cookie, so the address bar can drop it.
 */
export async function serveLiveView(
  tracker: JobStatusTracker,
  metrics: JobMetrics,
  options: LiveViewOptions,
): Promise<LiveViewServer> {
  const host = options.host ?? '127.0.0.1';
  const pushMs = options.pushMs ?? 1000;
  const dir = staticDir();
  const streams = new Set<ServerResponse>();
  // The tracker's snapshot plus the object-storage totals (the page's storage line) and the workers'
  // data pipeline tuners (its data pipeline card).
  const status = () =>
    JSON.stringify({
      ...tracker.snapshot(),
      storage: metrics.storageTotals?.() ?? [],
      dataPipelines: metrics.dataPipelines?.() ?? [],
    });

  const handle = async (request: IncomingMessage, response: ServerResponse): Promise<void> => {
    const url = new URL(request.url ?? '/', 'http://localhost');
    const queryToken = url.searchParams.get('token') ?? undefined;
    const given = [queryToken, bearerToken(request), cookieToken(request)];
    const authorized = given.some((t) => sameToken(t, options.token));
    const metricsAuthorized = authorized || given.some((t) => sameToken(t, options.metricsToken));
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      send(response, 405, 'text/plain; charset=utf-8', 'method not allowed\n');
      return;
    }
    if (url.pathname === '/metrics') {
      if (!metricsAuthorized) {
        send(response, 401, 'text/plain; charset=utf-8', 'missing or wrong token\n');
        return;
      }
      send(response, 200, metrics.contentType, metrics.metrics());
      return;
    }
    if (!authorized) {
      send(
        response,
        401,
        'text/plain; charset=utf-8',
        'missing or wrong job token: open the address the master printed (it ends in ?token=...)\n',
      );
      return;
    }
    if (url.pathname === '/' || url.pathname === '/index.html') {
      const headers: Record<string, string> = {
        'content-type': TYPES['.html'] as string,
        'cache-control': 'no-store',
        'x-content-type-options': 'nosniff',
        'content-security-policy':
          "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:",
      };
      if (queryToken !== undefined) {
        headers['set-cookie'] =
          `${COOKIE}=${encodeURIComponent(queryToken)}; HttpOnly; SameSite=Strict; Path=/`;
      }
      response.writeHead(200, headers);
      response.end(await readFile(path.join(dir, 'index.html')));
      return;
    }
    if (url.pathname === '/api/status') {
      send(response, 200, 'application/json; charset=utf-8', status());
      return;
    }
    if (url.pathname === '/api/events') {
      response.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8',
        'cache-control': 'no-store',
        connection: 'keep-alive',
      });
      const push = () => response.write(`data: ${status()}\n\n`);
      push();
      const timer = setInterval(push, pushMs);
      streams.add(response);
      request.on('close', () => {
        clearInterval(timer);
        streams.delete(response);
      });
      return;
    }
    if (url.pathname.startsWith('/static/')) {
      const name = path.normalize(url.pathname.slice('/static/'.length));
      const type = TYPES[path.extname(name)];
      if (type === undefined || name.startsWith('..') || path.isAbsolute(name)) {
        send(response, 404, 'text/plain; charset=utf-8', 'not found\n');
        return;
      }
      try {
        send(response, 200, type, await readFile(path.join(dir, name)));
      } catch {
        send(response, 404, 'text/plain; charset=utf-8', 'not found\n');
      }
      return;
    }
    send(response, 404, 'text/plain; charset=utf-8', 'not found\n');
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) send(response, 500, 'text/plain; charset=utf-8', `${String(error)}\n`);
      else response.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  const shown = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const origin = `http://${shown}:${port}`;
  return {
    origin,
    url: `${origin}/?token=${encodeURIComponent(options.token)}`,
    port,
    close: async () => {
      for (const stream of streams) stream.end();
      streams.clear();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
