import { once } from 'node:events';
import { createServer, type IncomingMessage, request, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';

/** A request the proxy saw: a CONNECT tunnel or an absolute-URI request, and its Proxy-Authorization. */
export interface ProxiedRequest {
  readonly method: string;
  /** `host:port` of a CONNECT, or the absolute URI of a plain request. */
  readonly target: string;
  /** The `user:password` of its `Proxy-Authorization: Basic` header, decoded, if any. */
  readonly credentials?: string;
}

/**
 * A small HTTP forward proxy (node:http) for tests, as corporate proxies behave: `CONNECT host:port`
 * opens a TCP tunnel (how HTTPS, and our clients' HTTP too, go through), and a request with an
 * absolute URI (`GET http://host/path`) is forwarded. Every request is recorded; with `credentials`
 * set, one without that `Proxy-Authorization` is refused with 407.
 */
export class ForwardProxy {
  readonly requests: ProxiedRequest[] = [];
  /** `user:password` required, or none. */
  credentials: string | undefined;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>`. */
    readonly url: string,
  ) {}

  static async start(): Promise<ForwardProxy> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const proxy = new ForwardProxy(server, `http://127.0.0.1:${address.port}`);
    server.on('connect', (req: IncomingMessage, client: Socket, head: Buffer) =>
      proxy.tunnel(req, client, head),
    );
    server.on('request', (req, res) => proxy.forward(req, res));
    server.on('connection', (socket: Socket) => {
      proxy.sockets.add(socket);
      socket.once('close', () => proxy.sockets.delete(socket));
    });
    return proxy;
  }

  async close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  /** Records the request; false (and the caller answers 407) when it lacks the required credentials. */
  private admit(req: IncomingMessage): boolean {
    const header = req.headers['proxy-authorization'];
    const credentials = header?.startsWith('Basic ')
      ? Buffer.from(header.slice(6), 'base64').toString()
      : undefined;
    const seen = { method: req.method ?? '', target: req.url ?? '' };
    this.requests.push(credentials === undefined ? seen : { ...seen, credentials });
    return this.credentials === undefined || credentials === this.credentials;
  }

  private tunnel(req: IncomingMessage, client: Socket, head: Buffer): void {
    client.on('error', () => undefined);
    if (!this.admit(req)) {
      client.end(
        'HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n',
      );
      return;
    }
    const [host = '', port = '443'] = (req.url ?? '').split(/:(?=\d+$)/);
    const upstream = connect(Number(port), host.replace(/^\[|\]$/g, ''), () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length > 0) upstream.write(head);
      upstream.pipe(client);
      client.pipe(upstream);
    });
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
  }

  private forward(req: IncomingMessage, res: import('node:http').ServerResponse): void {
    if (!this.admit(req)) {
      res.writeHead(407, { 'proxy-authenticate': 'Basic' }).end();
      return;
    }
    const { 'proxy-authorization': _, ...headers } = req.headers;
    const upstream = request(req.url ?? '', { method: req.method, headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  }
}
