import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';

/** How the server describes and serves one object. */
export interface ServedObjectOptions {
  /** Sends a strong ETag (a hash of the content) and honours If-Match (default true). */
  readonly etag?: boolean;
  /** Sends Last-Modified and honours If-Unmodified-Since (default true). */
  readonly lastModified?: boolean;
  /** Serves Range (default true); without it every GET answers 200 with the whole object. */
  readonly ranges?: boolean;
}

interface ServedObject extends Required<ServedObjectOptions> {
  readonly data: Uint8Array;
  readonly tag: string;
  readonly modified: Date;
}

/**
 * A small node:http file server for tests: HEAD and GET of in-memory objects, a single
 * `Range: bytes=a-b` (206 with Content-Range), and conditional reads (If-Match, 412 on a mismatch;
 * If-Unmodified-Since, 412 when the object is newer), each switchable per object.
 */
export class RangeHttpServer {
  private readonly objects = new Map<string, ServedObject>();
  private generation = 0;

  private constructor(
    private readonly server: Server,
    /** `http://127.0.0.1:<port>` (`https://` with TLS). */
    readonly origin: string,
  ) {}

  /** Starts on a free port of 127.0.0.1: HTTP, or HTTPS (`https://127.0.0.1:<port>`) with `tls`'s PEM key and certificate. */
  static async start(tls?: { readonly key: string; readonly cert: string }): Promise<RangeHttpServer> {
    const server = tls === undefined ? createServer() : createHttpsServer(tls);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const address = server.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const served = new RangeHttpServer(
      server,
      `${tls === undefined ? 'http' : 'https'}://127.0.0.1:${address.port}`,
    );
    server.on('request', (request, response) => served.answer(request, response));
    return served;
  }

  /** Serves (or replaces) `data` at `path`; a replacement gets a new ETag and a later Last-Modified. */
  put(path: string, data: Uint8Array, options: ServedObjectOptions = {}): void {
    this.generation++;
    this.objects.set(path, {
      data,
      etag: options.etag ?? true,
      lastModified: options.lastModified ?? true,
      ranges: options.ranges ?? true,
      tag: `"${createHash('sha1').update(data).digest('hex')}-${this.generation}"`,
      // Whole seconds, as HTTP dates carry; each replacement is at least a second newer.
      modified: new Date(Date.UTC(2024, 0, 1) + this.generation * 1000),
    });
  }

  async close(): Promise<void> {
    this.server.closeAllConnections();
    this.server.close();
    await once(this.server, 'close');
  }

  private answer(request: IncomingMessage, response: ServerResponse): void {
    const object = this.objects.get(request.url ?? '');
    if (object === undefined) {
      response.writeHead(404).end();
      return;
    }
    if (object.etag) response.setHeader('etag', object.tag);
    if (object.lastModified) response.setHeader('last-modified', object.modified.toUTCString());
    const ifMatch = request.headers['if-match'];
    const ifUnmodifiedSince = request.headers['if-unmodified-since'];
    const stale =
      (ifMatch !== undefined && (!object.etag || ifMatch !== object.tag)) ||
      (ifUnmodifiedSince !== undefined &&
        object.lastModified &&
        object.modified > new Date(ifUnmodifiedSince));
    if (stale) {
      response.writeHead(412).end();
      return;
    }
    const range = /^bytes=(\d+)-(\d+)$/.exec(request.headers.range ?? '');
    const size = object.data.byteLength;
    if (range === null || !object.ranges) {
      response.writeHead(200, { 'content-length': size });
      response.end(request.method === 'HEAD' ? undefined : object.data);
      return;
    }
    const start = Number(range[1]);
    const end = Math.min(Number(range[2]), size - 1);
    if (start >= size || end < start) {
      response.writeHead(416, { 'content-range': `bytes */${size}` }).end();
      return;
    }
    response.writeHead(206, {
      'content-range': `bytes ${start}-${end}/${size}`,
      'content-length': end - start + 1,
    });
    response.end(request.method === 'HEAD' ? undefined : object.data.subarray(start, end + 1));
  }
}
