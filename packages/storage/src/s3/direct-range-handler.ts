import { isIP } from 'node:net';
import { Connection, UnframedAnswer } from './direct-connection.js';

/** The parts of the AWS SDK's `HttpRequest` this handler reads. */
export interface SdkHttpRequest {
  readonly method: string;
  readonly protocol: string;
  readonly hostname: string;
  readonly port?: number;
  readonly path: string;
  readonly query?: Readonly<Record<string, string | readonly string[] | null | undefined>>;
  readonly headers: Readonly<Record<string, string | undefined>>;
  readonly body?: unknown;
  readonly username?: string;
  readonly password?: string;
  readonly fragment?: string;
}

/** An answer as the AWS SDK's middleware reads it (`HttpResponse`'s fields). */
export interface SdkHttpResponse {
  readonly statusCode: number;
  readonly reason?: string;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** The AWS SDK's request handler (`@smithy/node-http-handler`'s shape), as far as the client calls it. */
export interface SdkRequestHandler {
  handle(
    request: SdkHttpRequest,
    options?: { readonly abortSignal?: AbortSignal },
  ): Promise<{ response: SdkHttpResponse }>;
  destroy?(): void;
  updateHttpClientConfig?(key: never, value: never): void;
  httpHandlerConfigs?(): unknown;
}

/** Idle connections kept per host. */
const MAX_IDLE_PER_ORIGIN = 32;

const DEFAULT_PORTS = { 'http:': 80, 'https:': 443 } as const;

/**
 * The AWS SDK's request handler with the ranged GETs of object bytes (GetObject with `Range`, the
 * S3 byte source's reads) sent over connections of its own, whose answer bodies the socket reads
 * straight into the buffer the reader fills ({@link DirectBody.readInto}): no buffer per 64 KiB
 * read, no copy, no stream events. Through Node's HTTP client each piece of a body was a fresh
 * ArrayBuffer, copied once more, and their churn drove V8's collections; measured in
 * docs/data-readers.md ("Reader CPU").
 *
 * Everything else of a request stays the SDK's: the endpoint and addressing, SigV4 signing with its
 * credential chain, region redirects, error answers (read from the body as a stream, as the SDK's
 * handler gives them); every other request (HEAD, LIST, uploads) goes to `fallback`, the SDK's own
 * handler. HTTP/1.1, kept alive and reused, over TCP (`http://` endpoints: MinIO, Ceph RGW, s3rver
 * inside a cluster) or TLS (`https://`: AWS S3, GCS, R2), where each decrypted chunk is copied once
 * into that buffer (`direct-socket.ts`: Node documents `onread` for TCP sockets only). Not used
 * when proxy variables are set (the fallback's agents honour them). Answers not framed by a
 * Content-Length (chunked, or ended by the connection's close) are asked for again through
 * `fallback` ({@link UnframedAnswer}).
 */
export class DirectRangeHandler implements SdkRequestHandler {
  readonly #idle = new Map<string, Connection[]>();
  #destroyed = false;

  constructor(private readonly fallback: SdkRequestHandler) {}

  handle(
    request: SdkHttpRequest,
    options: { readonly abortSignal?: AbortSignal } = {},
  ): Promise<{ response: SdkHttpResponse }> {
    if (!isDirectRequest(request) || this.#destroyed) return this.fallback.handle(request, options);
    return this.#send(request, options.abortSignal);
  }

  updateHttpClientConfig(key: never, value: never): void {
    this.fallback.updateHttpClientConfig?.(key, value);
  }

  httpHandlerConfigs(): unknown {
    return this.fallback.httpHandlerConfigs?.() ?? {};
  }

  /** Closes the idle connections and the fallback's. */
  destroy(): void {
    this.#destroyed = true;
    for (const connections of this.#idle.values()) for (const connection of connections) connection.close();
    this.#idle.clear();
    this.fallback.destroy?.();
  }

  async #send(
    request: SdkHttpRequest,
    signal: AbortSignal | undefined,
  ): Promise<{ response: SdkHttpResponse }> {
    signal?.throwIfAborted();
    const hostname = request.hostname.startsWith('[') ? request.hostname.slice(1, -1) : request.hostname;
    const protocol = request.protocol === 'https:' ? 'https:' : 'http:';
    const defaultPort = DEFAULT_PORTS[protocol];
    const port = request.port ?? defaultPort;
    const origin = `${protocol}//${hostname}:${port}`;
    const connection = this.#take(origin) ?? new Connection(origin, { protocol, hostname, port }, this.#keep);
    try {
      const head = requestHead(request, hostname, port === defaultPort ? undefined : port);
      const response = await connection.exchange(head, signal);
      return { response };
    } catch (error) {
      // Chunked or close-delimited: sent again, signed as it was, through the SDK's handler.
      if (error instanceof UnframedAnswer) return this.fallback.handle(request, { abortSignal: signal });
      throw error;
    }
  }

  #take(origin: string): Connection | undefined {
    const idle = this.#idle.get(origin);
    for (let connection = idle?.pop(); connection !== undefined; connection = idle?.pop()) {
      if (connection.reusable) return connection.wake();
    }
    return undefined;
  }

  /** Takes back a connection whose answer ended cleanly, for the next request to its origin. */
  readonly #keep = (connection: Connection): void => {
    const idle = this.#idle.get(connection.origin) ?? [];
    if (this.#destroyed || idle.length >= MAX_IDLE_PER_ORIGIN) {
      connection.close();
      return;
    }
    idle.push(connection);
    this.#idle.set(connection.origin, idle);
    connection.sleep(() => {
      const at = idle.indexOf(connection);
      if (at >= 0) idle.splice(at, 1);
    });
  };
}

/** Whether the SDK's request is a ranged GET of object bytes (no body, no credentials in the URL). */
function isDirectRequest(request: SdkHttpRequest): boolean {
  return (
    request.method === 'GET' &&
    (request.protocol === 'http:' || request.protocol === 'https:') &&
    typeof request.headers.range === 'string' &&
    request.body == null &&
    request.username == null &&
    request.password == null &&
    !request.fragment
  );
}

/**
 * The request's head, as `@smithy/node-http-handler` would send it (its query encoding too); `port`
 * is left out of a Host header the SDK did not set when it is the scheme's default.
 */
function requestHead(request: SdkHttpRequest, hostname: string, port: number | undefined): string {
  const query = request.query === undefined ? '' : queryString(request.query);
  const lines = [`GET ${request.path}${query === '' ? '' : `?${query}`} HTTP/1.1`];
  let host = false;
  for (const [name, value] of Object.entries(request.headers)) {
    if (value === undefined) continue;
    if (/[\r\n]/.test(name) || /[\r\n]/.test(value)) throw new TypeError(`invalid header ${name}`);
    if (name.toLowerCase() === 'host') host = true;
    lines.push(`${name}: ${value}`);
  }
  if (!host) {
    const shown = isIP(hostname) === 6 ? `[${hostname}]` : hostname;
    lines.push(`host: ${port === undefined ? shown : `${shown}:${port}`}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

function queryString(query: NonNullable<SdkHttpRequest['query']>): string {
  const parts: string[] = [];
  for (const key of Object.keys(query).sort()) {
    const value = query[key];
    const name = escapeUri(key);
    if (Array.isArray(value)) for (const item of value) parts.push(`${name}=${escapeUri(item)}`);
    else if (typeof value === 'string') parts.push(`${name}=${escapeUri(value)}`);
    else parts.push(name);
  }
  return parts.join('&');
}

function escapeUri(text: string): string {
  return encodeURIComponent(text).replace(
    /[!'()*]/g,
    (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}
