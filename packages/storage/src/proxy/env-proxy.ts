import {
  type Agent as HttpAgent,
  Agent as HttpAgentClass,
  request as httpRequest,
  type IncomingMessage,
} from 'node:http';
import { type Agent as HttpsAgent, Agent as HttpsAgentClass, request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';

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

/** Whether a proxy variable is set at all (the proxy support is loaded only then). */
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

let agents: Promise<EnvProxyAgents> | undefined;

/**
 * Agents (keep-alive) that open each connection through the proxy {@link proxyFor} names for its
 * host, or directly when none applies (`NO_PROXY`), read from the environment at each new
 * connection. Built on `hpagent`'s CONNECT tunnels (both `http://` and `https://` targets are
 * tunnelled, as undici's ProxyAgent does), which is loaded only on the first call: a process with no
 * proxy variable never loads it. The proxy's user and password become `Proxy-Authorization`; a
 * refused tunnel fails with the proxy's status, never the proxy URL.
 */
export function envProxyAgents(): Promise<EnvProxyAgents> {
  agents ??= (async () => {
    const { HttpProxyAgent, HttpsProxyAgent } = await import('hpagent');
    // The proxy in the constructor is replaced per connection by the one the environment names.
    const placeholder = 'http://127.0.0.1:9';
    const httpAgent = new HttpProxyAgent({ proxy: placeholder, keepAlive: true });
    const httpsAgent = new HttpsProxyAgent({ proxy: placeholder, keepAlive: true });
    httpAgent.createConnection = routed(HttpProxyAgent.prototype, HttpAgentClass.prototype, 'http:');
    httpsAgent.createConnection = routed(HttpsProxyAgent.prototype, HttpsAgentClass.prototype, 'https:');
    return { httpAgent, httpsAgent };
  })();
  return agents;
}

type CreateConnection = HttpAgent['createConnection'];

/** `createConnection` through `proxied`'s tunnel when a proxy applies to the target, else `direct`'s. */
function routed(
  proxied: { createConnection: CreateConnection },
  direct: { createConnection: CreateConnection },
  protocol: 'http:' | 'https:',
): CreateConnection {
  return function (this: HttpAgent & { proxy: URL }, options, callback) {
    const host = options.hostname ?? options.host ?? 'localhost';
    const proxy = proxyFor(
      new URL(`${protocol}//${host.includes(':') ? `[${host}]` : host}:${options.port}`),
    );
    if (proxy === undefined) return direct.createConnection.call(this, options, callback);
    this.proxy = proxy;
    return proxied.createConnection.call(this, options, callback);
  };
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
  const { httpAgent, httpsAgent } = await envProxyAgents();
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
