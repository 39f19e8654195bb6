import { isIP, type Socket, connect as tcpConnect } from 'node:net';
import { type TLSSocket, connect as tlsConnect } from 'node:tls';

/**
 * Node's `onread` contract (`net.connect({ onread })`): `buffer` gives the memory the next read
 * goes into, `callback` is told how many bytes landed there and returns false to stop reading
 * until the socket is resumed.
 */
export interface SocketReader {
  buffer(): Uint8Array;
  callback(count: number, buffer: Uint8Array): boolean;
}

/** Where a direct connection goes: `http:` or `https:`, host (no brackets) and port. */
export interface DirectEndpoint {
  readonly protocol: 'http:' | 'https:';
  readonly hostname: string;
  readonly port: number;
}

/** A connecting socket read through a {@link SocketReader}. */
export interface ReaderSocket {
  readonly socket: Socket;
  /** Reads on after the reader said stop. */
  resume(): void;
  /** The error a socket 'error' becomes: a failed TLS handshake names the endpoint. */
  failure(error: Error): Error;
}

/**
 * Opens a connection to `endpoint` whose bytes go to `reader`. Plain TCP reads straight into the
 * reader's buffers (`onread`, documented for TCP sockets only). TLS emulates it: each decrypted
 * 'data' chunk is copied into the buffer the reader gives, so the connection code above (heads,
 * framing, hand-back, retries, stalls) is the same for both schemes.
 */
export function openReaderSocket(endpoint: DirectEndpoint, reader: SocketReader): ReaderSocket {
  const { hostname: host, port } = endpoint;
  if (endpoint.protocol === 'http:') {
    const socket = tcpConnect({ host, port, onread: reader });
    return { socket, resume: () => socket.resume(), failure: (error) => error };
  }
  // No `ca` and no `rejectUnauthorized`: Node's default trust (its bundled roots, plus
  // NODE_EXTRA_CA_CERTS and the CA flags it was started with), as the SDK's own handler has.
  const socket = tlsConnect({
    host,
    port,
    // SNI names hosts, never addresses (RFC 6066); an address is still checked against the certificate.
    ...(isIP(host) === 0 ? { servername: host } : {}),
    ALPNProtocols: ['http/1.1'],
  });
  const feed = new ChunkFeed(socket, reader);
  socket.on('data', (chunk: Buffer) => feed.push(chunk));
  let secure = false;
  socket.once('secureConnect', () => {
    secure = true;
  });
  const shown = isIP(host) === 6 ? `[${host}]` : host;
  return {
    socket,
    resume: () => feed.resume(),
    // Before the handshake ends: an untrusted certificate, a wrong host, a reset (still retried: the cause).
    failure: (error) =>
      secure ? error : new Error(`TLS to https://${shown}:${port} failed`, { cause: error }),
  };
}

/**
 * Hands a TLS socket's 'data' chunks to a {@link SocketReader} as `onread` would: copied into the
 * buffer it gives, at most that buffer's length per call; when it says stop, the socket pauses and
 * the rest of the chunk waits for {@link ChunkFeed.resume}.
 */
class ChunkFeed {
  #left: Buffer | undefined;

  constructor(
    private readonly socket: TLSSocket,
    private readonly reader: SocketReader,
  ) {}

  /** Returns false when the reader said stop (the socket is paused). */
  push(chunk: Buffer): boolean {
    let at = 0;
    while (at < chunk.byteLength) {
      if (this.socket.destroyed) return false;
      const into = this.reader.buffer();
      const count = Math.min(into.byteLength, chunk.byteLength - at);
      if (count === 0) {
        // A reader with no room would spin here for ever: the connection is given up instead.
        this.socket.destroy(new Error('the connection was given no memory to read into'));
        return false;
      }
      into.set(chunk.subarray(at, at + count));
      at += count;
      if (!this.reader.callback(count, into)) {
        this.#left = at < chunk.byteLength ? chunk.subarray(at) : undefined;
        this.socket.pause();
        return false;
      }
    }
    return true;
  }

  resume(): void {
    const left = this.#left;
    this.#left = undefined;
    if (left === undefined || this.push(left)) this.socket.resume();
  }
}
