import {
  type ClientRequestArgs,
  type Agent as HttpAgent,
  Agent as HttpAgentClass,
  request as httpRequest,
  type IncomingMessage,
} from 'node:http';
import { type Agent as HttpsAgent, Agent as HttpsAgentClass, request as httpsRequest } from 'node:https';
import type { Socket } from 'node:net';
import { type Duplex, Readable } from 'node:stream';

/**
 * The proxy `HTTPS_PROXY` / `HTTP_PROXY` name for `url` (lower-case names first, as Node's own
 * `NODE_USE_ENV_PROXY` and curl read them), unless `NO_PROXY` exempts its host: `*` exempts all;
 * an entry `example.com`, `.example.com` or `*.example.com` exempts that host and its subdomains;
 * `host:port` only that port; an IP address only itself. Undefined when no proxy applies.
 */
export function proxyFor(url: URL, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  const https = url.protocol === 'https:';
  const value = https ? (env.https_proxy ?? env.HTTPS_PROXY) : (env.http_proxy ?? env.HTTP_PROXY);
  if (value === undefined || value === '' || bypassed(url, env.no_proxy ?? env.NO_PROXY ?? ''))
    return undefined;
  try {
    // A bare `host:port`, as many set it, means an http:// proxy.
    return new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
  } catch {
    // The variable's value may hold a password: it is never repeated.
    throw new TypeError(`${https ? 'HTTPS_PROXY' : 'HTTP_PROXY'} is not a URL`);
  }
}

/** Whether a proxy variable is set at all (the S3 client gets the proxy agents only then). */
export function proxyVariablesSet(env: NodeJS.ProcessEnv = process.env): boolean {
  return [env.https_proxy, env.HTTPS_PROXY, env.http_proxy, env.HTTP_PROXY].some(
    (v) => v !== undefined && v !== '',
  );
}

function bypassed(url: URL, noProxy: string): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  for (const raw of noProxy.split(/[\s,]+/)) {
    const entry = raw.trim().toLowerCase();
    if (entry === '') continue;
    if (entry === '*') return true;
    const [, name = entry, entryPort] = /^(.*?)(?::(\d+))?$/.exec(entry) ?? [];
    if (entryPort !== undefined && entryPort !== port) continue;
    const domain = name.replace(/^\*?\./, '');
    if (host === domain || host.endsWith(`.${domain}`)) return true;
  }
  return false;
}

/** The agents that send connections through the proxies the environment names. */
export interface EnvProxyAgents {
  readonly httpAgent: HttpAgent;
  readonly httpsAgent: HttpsAgent;
}

let agents: EnvProxyAgents | undefined;

/**
 * Agents (keep-alive) that open each connection through the proxy {@link proxyFor} names for its
 * host, or directly when none applies (`NO_PROXY`), read from the environment at each new
 * connection. Both `http://` and `https://` targets go through a `CONNECT` tunnel (as undici's
 * ProxyAgent sends them); a proxy URL's user and password become `Proxy-Authorization: Basic`. A
 * refused tunnel fails naming the proxy's host and its status, never its credentials.
 */
export function envProxyAgents(): EnvProxyAgents {
  agents ??= {
    httpAgent: new EnvProxyHttpAgent({ keepAlive: true }),
    httpsAgent: new EnvProxyHttpsAgent({ keepAlive: true }),
  };
  return agents;
}

type ConnectCallback = (error: Error | null, stream: Duplex) => void;

class EnvProxyHttpAgent extends HttpAgentClass {
  override createConnection(
    options: ClientRequestArgs,
    callback?: ConnectCallback,
  ): Duplex | null | undefined {
    return routeConnection(options, callback, 'http:', (direct, cb) => super.createConnection(direct, cb));
  }
}

class EnvProxyHttpsAgent extends HttpsAgentClass {
  override createConnection(
    options: ClientRequestArgs,
    callback?: ConnectCallback,
  ): Duplex | null | undefined {
    // Through a tunnel, `socket` is the tunnel: TLS to the target runs inside it.
    return routeConnection(options, callback, 'https:', (direct, cb) => super.createConnection(direct, cb));
  }
}

/**
 * An agent's new connection: `connect(options)` directly when no proxy applies to the target, else
 * a tunnel through the proxy, handed to `connect` as the socket to speak over (TLS for https).
 */
function routeConnection(
  options: ClientRequestArgs,
  callback: ConnectCallback | undefined,
  protocol: 'http:' | 'https:',
  connect: (options: ClientRequestArgs, callback?: ConnectCallback) => Duplex | null | undefined,
): Duplex | null | undefined {
  const proxy = proxyForConnection(options, protocol);
  if (proxy === undefined) return connect(options, callback);
  tunnel(proxy, options, (error, socket) => {
    if (error !== null || socket === undefined) {
      callback?.(error ?? new Error('no tunnel'), undefined as unknown as Duplex);
    } else {
      callback?.(
        null,
        protocol === 'http:' ? socket : (connect({ ...options, socket } as ClientRequestArgs) as Duplex),
      );
    }
  });
  return undefined;
}

function proxyForConnection(options: ClientRequestArgs, protocol: 'http:' | 'https:'): URL | undefined {
  const host = options.hostname ?? options.host ?? 'localhost';
  const port = options.port ?? (protocol === 'https:' ? 443 : 80);
  return proxyFor(new URL(`${protocol}//${host.includes(':') ? `[${host}]` : host}:${port}`));
}

/** Opens a `CONNECT` tunnel through `proxy` to the connection's host and port. */
function tunnel(
  proxy: URL,
  options: ClientRequestArgs,
  done: (error: Error | null, socket?: Socket) => void,
): void {
  const target = `${options.hostname ?? options.host}:${options.port}`;
  const headers: Record<string, string> = { host: target };
  if (proxy.username !== '' || proxy.password !== '') {
    const user = `${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`;
    headers['proxy-authorization'] = `Basic ${Buffer.from(user).toString('base64')}`;
  }
  const request = (proxy.protocol === 'https:' ? httpsRequest : httpRequest)({
    method: 'CONNECT',
    host: proxy.hostname.replace(/^\[|\]$/g, ''),
    port: proxy.port === '' ? (proxy.protocol === 'https:' ? 443 : 80) : Number(proxy.port),
    path: target,
    headers,
    agent: false,
    setHost: false,
    ...(options.timeout === undefined ? {} : { timeout: options.timeout }),
  });
  request.once('connect', (response, socket) => {
    if (response.statusCode === 200) {
      done(null, socket);
    } else {
      socket.destroy();
      done(
        new Error(
          `the proxy ${proxy.host} refused a tunnel to ${target}: ${response.statusCode} ${response.statusMessage ?? ''}`.trim(),
        ),
      );
    }
  });
  request.once('timeout', () => request.destroy(new Error(`the proxy ${proxy.host} did not answer in time`)));
  request.once('error', (error) => done(new Error(`cannot reach the proxy ${proxy.host}: ${error.message}`)));
  request.end();
}

/** What {@link fetchThroughEnvProxy} takes of `fetch`'s init. */
export interface ProxiedRequestInit {
  readonly method?: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly signal: AbortSignal;
}

/**
 * `fetch(url, init)` honouring `HTTPS_PROXY` / `HTTP_PROXY` / `NO_PROXY` on every Node version
 * (Node's `fetch` ignores them unless started with `NODE_USE_ENV_PROXY=1`, Node 22.21 / 24.5 on):
 * without a proxy for `url` it is Node's `fetch`; with one, the request goes through node:http(s)
 * and {@link envProxyAgents}, answered as a `Response` with the body as a web stream.
 */
export async function fetchThroughEnvProxy(url: URL, init: ProxiedRequestInit): Promise<Response> {
  if (!proxyVariablesSet() || proxyFor(url) === undefined) return fetch(url, init);
  const { httpAgent, httpsAgent } = envProxyAgents();
  const https = url.protocol === 'https:';
  const answer = await new Promise<IncomingMessage>((resolve, reject) => {
    const request = (https ? httpsRequest : httpRequest)(url, {
      method: init.method ?? 'GET',
      headers: init.headers,
      agent: https ? httpsAgent : httpAgent,
      signal: init.signal,
    });
    request.once('response', resolve);
    request.once('error', (error) => reject(new TypeError('fetch failed', { cause: error })));
    request.end();
  });
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const status = answer.statusCode ?? 502;
  const bodyless = init.method === 'HEAD' || status === 204 || status === 304;
  if (bodyless) answer.resume();
  return new Response(bodyless ? null : (Readable.toWeb(answer) as ReadableStream<Uint8Array>), {
    status,
    statusText: answer.statusMessage ?? '',
    headers,
  });
}
