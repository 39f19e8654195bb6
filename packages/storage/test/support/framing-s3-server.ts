import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';

/** How the server frames its answers' bodies: Content-Length, chunked, or ended by closing. */
export type Framing = 'length' | 'chunked' | 'close';

/** An error answer the server gives to every GET instead of the bytes, as S3 sends it. */
export interface ErrorAnswer {
  readonly status: number;
  readonly reason: string;
  readonly code: string;
  readonly message: string;
}

const ETAG = '"framing-object-etag"';

/**
 * A raw-socket S3 stand-in serving one object at any key: HEAD with its size and ETag, GET with
 * `Range` answering 206, or an {@link ErrorAnswer}'s XML document, with the body framed as
 * `framing` says (node:http would always choose the framing itself). HTTP/1.1, kept alive unless
 * the framing is `close`; it counts the GETs it answered.
 */
export class FramingS3Server {
  framing: Framing = 'length';
  error: ErrorAnswer | undefined;
  /** Bytes of filler header added to every GET's answer head (to test a bound on heads). */
  headPadding = 0;
  gets = 0;
  readonly #sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
    readonly data: Uint8Array,
  ) {}

  static async start(data: Uint8Array): Promise<FramingS3Server> {
    const server = createServer();
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const { port } = server.address() as { port: number };
    const served = new FramingS3Server(server, `http://127.0.0.1:${port}`, data);
    server.on('connection', (socket) => served.#serve(socket));
    return served;
  }

  /** The object's ETag, as HEAD gives it. */
  get etag(): string {
    return ETAG;
  }

  async close(): Promise<void> {
    for (const socket of this.#sockets) socket.destroy();
    this.server.close();
    await once(this.server, 'close');
  }

  #serve(socket: Socket): void {
    this.#sockets.add(socket);
    socket.on('close', () => this.#sockets.delete(socket));
    socket.on('error', () => {});
    let pending = '';
    socket.setEncoding('latin1');
    socket.on('data', (text: string) => {
      pending += text;
      for (let end = pending.indexOf('\r\n\r\n'); end >= 0; end = pending.indexOf('\r\n\r\n')) {
        const head = pending.slice(0, end);
        pending = pending.slice(end + 4);
        this.#answer(socket, head);
      }
    });
  }

  #answer(socket: Socket, head: string): void {
    const [requestLine = '', ...lines] = head.split('\r\n');
    const method = requestLine.split(' ')[0];
    const headers = new Map(
      lines.map((line) => [
        line.slice(0, line.indexOf(':')).trim().toLowerCase(),
        line.slice(line.indexOf(':') + 1).trim(),
      ]),
    );
    const common = [`ETag: ${ETAG}`, 'Last-Modified: Thu, 26 Nov 2026 10:00:00 GMT'];
    if (method === 'HEAD') {
      const fields = [
        ...common,
        `Content-Length: ${this.data.byteLength}`,
        'Content-Type: application/octet-stream',
      ];
      socket.write(`HTTP/1.1 200 OK\r\n${fields.join('\r\n')}\r\n\r\n`, 'latin1');
      return;
    }
    this.gets++;
    if (this.error !== undefined) {
      const { status, reason, code, message } = this.error;
      const xml = `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message><RequestId>framing-1</RequestId></Error>`;
      this.#send(socket, `${status} ${reason}`, ['Content-Type: application/xml'], Buffer.from(xml));
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(headers.get('range') ?? '');
    if (range === null) {
      this.#send(socket, '200 OK', common, this.data);
      return;
    }
    const start = Number(range[1]);
    const end = Math.min(Number(range[2]), this.data.byteLength - 1);
    this.#send(
      socket,
      '206 Partial Content',
      [...common, `Content-Range: bytes ${start}-${end}/${this.data.byteLength}`],
      this.data.subarray(start, end + 1),
    );
  }

  #send(socket: Socket, status: string, fields: readonly string[], body: Uint8Array): void {
    const framing =
      this.framing === 'length'
        ? [`Content-Length: ${body.byteLength}`]
        : this.framing === 'chunked'
          ? ['Transfer-Encoding: chunked']
          : ['Connection: close'];
    const padding = this.headPadding > 0 ? [`X-Filler: ${'f'.repeat(this.headPadding)}`] : [];
    const all = [...fields, ...framing, ...padding];
    socket.write(`HTTP/1.1 ${status}\r\n${all.join('\r\n')}\r\n\r\n`, 'latin1');
    if (this.framing === 'chunked') {
      // Two chunks, so that a reader must join them.
      const half = body.byteLength >> 1;
      for (const chunk of [body.subarray(0, half), body.subarray(half)]) {
        if (chunk.byteLength > 0) socket.write(`${chunk.byteLength.toString(16)}\r\n`, 'latin1');
        if (chunk.byteLength > 0) socket.write(chunk);
        if (chunk.byteLength > 0) socket.write('\r\n', 'latin1');
      }
      socket.write('0\r\n\r\n', 'latin1');
    } else {
      socket.write(body);
      if (this.framing === 'close') socket.end();
    }
  }
}
