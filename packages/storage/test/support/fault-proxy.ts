import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { createSecureContext, TLSSocket } from 'node:tls';

/** A fault the proxy applies to one request. */
export type Fault =
  /** Forwards `afterBytes` bytes of the answer (headers included), then resets the client's connection. */
  | { readonly kind: 'reset'; readonly afterBytes: number }
  /** Forwards `afterBytes` bytes of the answer, then sends nothing more, keeping the connection open. */
  | { readonly kind: 'stall'; readonly afterBytes: number }
  /** Forwards `afterBytes` bytes of the answer, then closes the client's connection cleanly (a short body). */
  | { readonly kind: 'end'; readonly afterBytes: number }
  /** Answers itself with this status and an S3 XML error body (503 `SlowDown`, 500 `InternalError`). */
  | { readonly kind: 'status'; readonly status: number; readonly code: string };

/** A request the proxy saw: method, path and headers (names lower-cased). */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
}

/** A TLS handshake the proxy completed: what the client offered and got. */
export interface SeenHandshake {
  /** The ALPN protocol agreed (`http/1.1`), false (or null) when the client offered none. */
  readonly alpnProtocol: string | false | null;
  /** The SNI name the client sent, false (or null) when none. */
  readonly servername: string | false | null;
}

/**
 * A TCP proxy (node:net) between readers and a real server that parses HTTP/1.1 request heads, so it
 * can add latency to every request and apply faults to chosen ones: a connection reset mid-body, a
 * stalled body, an error status of its own (bursts of 503 SlowDown). Started with a key and
 * certificate, it is an `https://` endpoint: TLS ends at the proxy, which speaks plain HTTP to the
 * server behind it, so its faults apply to the decrypted answer's bytes.
 */
export class FaultProxy {
  /** Added before each request is forwarded, in ms. */
  latencyMs = 0;
  /** Every request seen, in order. */
  readonly requests: SeenRequest[] = [];
  /** Client connections accepted so far. */
  connections = 0;
  /** The TLS handshakes completed, in order (an `https://` proxy's). */
  readonly handshakes: SeenHandshake[] = [];
  private faults: Fault[] = [];
  private matches: (request: SeenRequest) => boolean = () => false;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`, or `https://` with `tls`. */
    readonly endpoint: string,
  ) {}

  /**
   * Starts a proxy on a free port of 127.0.0.1 forwarding to `targetPort` there; with `tls`, clients
   * connect over TLS with that key and certificate (ALPN `http/1.1` offered).
   */
  static async start(
    targetPort: number,
    tls?: { readonly key: string; readonly cert: string },
  ): Promise<FaultProxy> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const proxy = new FaultProxy(server, `${tls ? 'https' : 'http'}://127.0.0.1:${address.port}`);
    const secureContext = tls === undefined ? undefined : createSecureContext(tls);
    server.on('connection', (socket: Socket) => {
      if (secureContext === undefined) {
        proxy.serve(socket, socket, targetPort);
        return;
      }
      const client = new TLSSocket(socket, { isServer: true, secureContext, ALPNProtocols: ['http/1.1'] });
      client.once('secure', () =>
        proxy.handshakes.push({ alpnProtocol: client.alpnProtocol, servername: client.servername }),
      );
      proxy.serve(client, socket, targetPort);
    });
    return proxy;
  }

  /** The next requests for which `matches` holds get `faults`, one each, in order. */
  inject(faults: readonly Fault[], matches: (request: SeenRequest) => boolean = isRangedGet): void {
    this.faults = [...faults];
    this.matches = matches;
  }

  /** Faults not yet applied. */
  get pendingFaults(): number {
    return this.faults.length;
  }

  /** Closes every connection now, as a server ending idle kept-alive connections does. */
  dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  /** `client` carries the HTTP bytes; `tcp` is its TCP connection (the same socket without TLS), which a reset resets. */
  private serve(client: Socket, tcp: Socket, targetPort: number): void {
    this.connections++;
    const upstream = connect(targetPort, '127.0.0.1');
    this.track(client);
    this.track(tcp);
    this.track(upstream);
    let pending = Buffer.alloc(0);
    let queue = Promise.resolve();
    let fault: Exclude<Fault, { readonly kind: 'status' }> | undefined;
    let answered = 0;
    const closeBoth = (): void => {
      client.destroy();
      upstream.destroy();
    };
    client.on('close', closeBoth);
    upstream.on('close', () => client.destroy());
    upstream.on('data', (data: Buffer) => {
      if (fault === undefined) {
        client.write(data);
        return;
      }
      const room = Math.max(0, fault.afterBytes - answered);
      answered += data.byteLength;
      if (room > 0) client.write(data.subarray(0, room));
      if (answered < fault.afterBytes) return;
      if (fault.kind === 'reset') {
        tcp.resetAndDestroy();
        client.destroy();
        upstream.destroy();
      } else if (fault.kind === 'end') {
        client.end();
        upstream.destroy();
      } else {
        upstream.pause();
      }
    });
    client.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      for (;;) {
        const request = takeRequest(pending);
        if (request === undefined) break;
        pending = pending.subarray(request.bytes.byteLength);
        queue = queue.then(async () => {
          this.requests.push(request.seen);
          const chosen = this.matches(request.seen) ? this.faults.shift() : undefined;
          if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
          if (chosen?.kind === 'status') {
            client.end(errorAnswer(chosen.status, chosen.code));
            upstream.destroy();
            return;
          }
          if (chosen !== undefined) {
            fault = chosen;
            answered = 0;
          }
          upstream.write(request.bytes);
        });
      }
    });
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => this.sockets.delete(socket));
  }
}

/** GETs with a Range header: the range reads faults are meant for. */
export function isRangedGet(request: SeenRequest): boolean {
  return request.method === 'GET' && request.headers.range !== undefined;
}

function takeRequest(buffer: Buffer): { bytes: Buffer; seen: SeenRequest } | undefined {
  const end = buffer.indexOf('\r\n\r\n');
  if (end < 0) return undefined;
  const [requestLine = '', ...lines] = buffer.subarray(0, end).toString('latin1').split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  const total = end + 4 + Number(headers['content-length'] ?? 0);
  if (buffer.byteLength < total) return undefined;
  const [method = '', path = ''] = requestLine.split(' ');
  return { bytes: Buffer.from(buffer.subarray(0, total)), seen: { method, path, headers } };
}

function errorAnswer(status: number, code: string): string {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>injected by the test proxy</Message></Error>`;
  return (
    `HTTP/1.1 ${status} ${code}\r\nContent-Type: application/xml\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
    `Connection: close\r\n\r\n${body}`
  );
}
