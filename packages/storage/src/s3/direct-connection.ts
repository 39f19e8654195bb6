import type { SdkHttpResponse } from './direct-range-handler.js';
import { type DirectEndpoint, openReaderSocket, type ReaderSocket } from './direct-socket.js';
import { type BodyConnection, HangUp, SocketBody } from './socket-body.js';

/** Bytes a connection reads into when no body is being written to memory its caller owns. */
const SCRATCH_BYTES = 64 * 1024;
/** The longest answer head read (status line and headers). */
const MAX_HEAD_BYTES = 64 * 1024;
/** How long an idle connection is kept. */
const IDLE_MS = 4000;

/** What an exchange aborted by `signal` fails with: the signal's reason (the attempt's own timeout tells its cause). */
function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : Object.assign(new Error('aborted'), { name: 'AbortError' });
}

/** What a connection does with the bytes it reads now. */
type Phase = 'idle' | 'head' | 'body';

/** One kept-alive connection, one request at a time. */
export class Connection implements BodyConnection {
  readonly #transport: ReaderSocket;
  readonly #socket: ReaderSocket['socket'];
  readonly #scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  #phase: Phase = 'idle';
  #head: Buffer | undefined;
  #onHead: ((response: SdkHttpResponse) => void) | undefined;
  #onFail: ((error: Error) => void) | undefined;
  #body: SocketBody | undefined;
  #idleTimer: NodeJS.Timeout | undefined;
  #forget: (() => void) | undefined;
  #closed = false;

  /**
   * @param origin - the pool's key for the endpoint (scheme, host and port).
   * @param keep - takes the connection back once an answer ended cleanly, for the next request.
   */
  constructor(
    readonly origin: string,
    endpoint: DirectEndpoint,
    private readonly keep: (connection: Connection) => void,
  ) {
    // Node asks for the buffer of the next read right after handing over the last one.
    this.#transport = openReaderSocket(endpoint, {
      buffer: (): Uint8Array => this.#body?.target ?? this.#scratch,
      callback: (count: number, buffer: Uint8Array): boolean => this.#onRead(count, buffer),
    });
    this.#socket = this.#transport.socket;
    this.#socket.setNoDelay(true);
    this.#socket.on('error', (error) => this.#fail(this.#transport.failure(error)));
    this.#socket.on('end', () => this.#fail(new HangUp()));
    this.#socket.on('close', () => this.#fail(new HangUp()));
  }

  /** Open and idle: fit for another request. */
  get reusable(): boolean {
    return !this.#closed && this.#phase === 'idle' && !this.#socket.destroyed;
  }

  /** Sends `head`; the answer once its head is read (its body then comes from the socket). */
  exchange(head: string, signal: AbortSignal | undefined): Promise<SdkHttpResponse> {
    return new Promise<SdkHttpResponse>((resolve, reject) => {
      const onAbort = (): void => {
        const error = abortError(signal as AbortSignal);
        if (this.#body !== undefined) this.#body.destroy(error);
        else this.#fail(error);
      };
      const stopWatching = (): void => signal?.removeEventListener('abort', onAbort);
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#phase = 'head';
      this.#onHead = (response) => {
        // The signal still ends the body (a stall, the reader closing) until the body is done.
        (response.body as SocketBody).once('close', stopWatching);
        resolve(response);
      };
      this.#onFail = (error) => {
        stopWatching();
        reject(error);
      };
      this.#socket.write(head, 'latin1');
      this.#transport.resume();
    });
  }

  /** Parks an idle connection: unreferenced, closed after a while; `forget` takes it out of the pool. */
  sleep(forget: () => void): void {
    this.#forget = forget;
    this.#socket.unref();
    // Reading on while idle, so that a server closing it is seen now, not by the next request.
    this.#transport.resume();
    this.#idleTimer = setTimeout(() => this.close(), IDLE_MS);
    this.#idleTimer.unref();
  }

  wake(): this {
    clearTimeout(this.#idleTimer);
    this.#forget = undefined;
    this.#socket.ref();
    return this;
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#idleTimer);
    this.#forget?.();
    this.#forget = undefined;
    this.#socket.destroy();
  }

  /** The body's bytes are all read (`reusable`: cleanly, on a kept-alive connection), or it was given up. */
  bodyDone(reusable: boolean): void {
    this.#body = undefined;
    this.#phase = 'idle';
    if (reusable && !this.#closed) this.keep(this);
    else this.close();
  }

  /** Reads resume after a pause (the body wants more). */
  resume(): void {
    if (!this.#closed) this.#transport.resume();
  }

  #onRead(count: number, buffer: Uint8Array): boolean {
    if (this.#phase === 'body') return (this.#body as SocketBody).received(count, buffer);
    if (this.#phase === 'idle') {
      // Bytes nobody asked for: the connection's framing is lost.
      this.close();
      return false;
    }
    const read = Buffer.from(buffer.subarray(0, count));
    const bytes = this.#head === undefined ? read : Buffer.concat([this.#head, read]);
    const end = bytes.indexOf('\r\n\r\n');
    if ((end < 0 ? bytes.byteLength : end) > MAX_HEAD_BYTES) {
      // Found or not, a head past the bound is refused (held bytes stay under two reads' worth).
      this.#fail(new Error('the answer head to a ranged GET is over 64 KiB'));
      return false;
    }
    if (end < 0) {
      this.#head = bytes;
      return true;
    }
    this.#head = undefined;
    let parsed: ParsedHead;
    try {
      parsed = parseHead(bytes.toString('latin1', 0, end));
    } catch (error) {
      this.#fail(error as Error);
      return false;
    }
    const rest = bytes.subarray(end + 4);
    if (parsed.statusCode < 200) {
      // An interim answer (100 Continue): the real one follows.
      return rest.byteLength === 0 ? true : this.#onRead(rest.byteLength, rest);
    }
    const body = new SocketBody(this, parsed.bodyBytes, parsed.keepAlive);
    this.#body = body;
    this.#phase = 'body';
    const onHead = this.#onHead;
    this.#onHead = undefined;
    this.#onFail = undefined;
    onHead?.({ statusCode: parsed.statusCode, reason: parsed.reason, headers: parsed.headers, body });
    // The bytes after the head wait for the body's reader; reading pauses until it says how.
    return body.hold(rest);
  }

  #fail(error: Error): void {
    if (this.#closed && this.#phase === 'idle') return;
    const onFail = this.#onFail;
    const body = this.#body;
    this.#onFail = undefined;
    this.#onHead = undefined;
    this.#body = undefined;
    this.#phase = 'idle';
    this.close();
    onFail?.(error);
    body?.broken(error);
  }
}

/**
 * An answer the direct path does not frame itself: chunked (`Transfer-Encoding`, as proxies and some
 * S3-compatible stores send error documents and even 206s) or delimited by the connection's close.
 * The request goes again through the SDK's own handler, which reads such bodies and tells a close
 * that cut a body short from one that ended it; they are rare, so the extra round trip is cheap.
 */
export class UnframedAnswer extends Error {
  constructor(readonly statusCode: number) {
    super(
      `a ${statusCode} answer to a ranged GET not framed by a Content-Length (chunked, or ended by closing)`,
    );
  }
}

export interface ParsedHead {
  readonly statusCode: number;
  readonly reason: string;
  readonly headers: Record<string, string>;
  /** The body's length (always given: answers framed otherwise are {@link UnframedAnswer}s). */
  readonly bodyBytes: number;
  readonly keepAlive: boolean;
}

/**
 * The Content-Length header's value (repeated ones joined by commas, which must agree): digits only,
 * so that `0x10`, `1e3` or `-1` are refused rather than read as a number.
 */
function contentLength(value: string): number {
  const values = new Set(value.split(',').map((item) => item.trim()));
  const [only] = values;
  const bytes =
    values.size === 1 && only !== undefined && /^\d{1,15}$/.test(only) ? Number(only) : Number.NaN;
  if (!Number.isSafeInteger(bytes)) {
    throw new Error(
      `a bad Content-Length in the answer to a ranged GET: ${JSON.stringify(value.slice(0, 80))}`,
    );
  }
  return bytes;
}

/** The status line and headers of an answer (the text before its blank line). */
export function parseHead(text: string): ParsedHead {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0] ?? '');
  if (status === null) {
    throw new Error(`not an HTTP/1.x answer: ${JSON.stringify((lines[0] ?? '').slice(0, 80))}`);
  }
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0)
      throw new Error(`a malformed header line in the answer: ${JSON.stringify(line.slice(0, 80))}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  const statusCode = Number(status[2]);
  const noBody = statusCode === 204 || statusCode === 304 || statusCode < 200;
  if (!noBody && (headers['transfer-encoding'] !== undefined || headers['content-length'] === undefined)) {
    throw new UnframedAnswer(statusCode);
  }
  const bodyBytes = noBody ? 0 : contentLength(headers['content-length'] as string);
  const connection = headers.connection?.toLowerCase() ?? '';
  const keepAlive = status[1] === '1' ? connection !== 'close' : connection === 'keep-alive';
  return { statusCode, reason: status[3] ?? '', headers, bodyBytes, keepAlive };
}
