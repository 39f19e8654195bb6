import { Readable } from 'node:stream';
import type { DirectBody } from '../remote/attempts.js';

/** What a body asks of the connection it is read from. */
export interface BodyConnection {
  /** Reads resume after a pause (the body wants more). */
  resume(): void;
  /** The body's bytes are all read (`reusable`: cleanly, on a kept-alive connection), or it was given up. */
  bodyDone(reusable: boolean): void;
}

/** A connection that closed before its answer was whole (retried as a reset). */
export class HangUp extends Error {
  readonly code = 'ECONNRESET';
  constructor() {
    super('socket hang up');
  }
}

/**
 * An answer's body: a Readable (the SDK reads error answers this way, and the byte source a server's
 * whole object when it ignored `Range`), or written by the socket straight into memory the caller
 * owns ({@link SocketBody.readInto}).
 */
export class SocketBody extends Readable implements DirectBody {
  /** Where the socket reads next in the direct mode; undefined otherwise. */
  target: Uint8Array | undefined;
  /** Bytes of the body still to come from the socket (the direct path reads only answers with a Content-Length). */
  #unread: number;
  /** Bytes read from the socket and not yet handed to the reader. */
  #held: Buffer | undefined;
  #direct:
    | {
        readonly resolve: () => void;
        readonly reject: (error: Error) => void;
        readonly progress: (count: number) => void;
      }
    | undefined;
  #released = false;

  constructor(
    private readonly connection: BodyConnection,
    bodyBytes: number,
    private readonly keepAlive: boolean,
  ) {
    super();
    this.#unread = bodyBytes;
    // A body read into memory reports its failure through readInto's promise, and one given up
    // (destroyed with the reason) may have no reader: its 'error' must not be uncaught.
    this.on('error', () => {});
  }

  /**
   * Bytes that came with the head. Returns whether the connection reads on: only when they were the
   * whole body (the connection is idle again); otherwise reading waits for the reader to choose how.
   */
  hold(bytes: Buffer): boolean {
    if (bytes.byteLength > this.#unread) {
      this.destroy(new Error('the server sent more bytes than its answer has'));
      return false;
    }
    if (bytes.byteLength > 0) {
      this.#held = Buffer.from(bytes);
      this.#unread -= bytes.byteLength;
    }
    if (this.#unread === 0) this.#release(true);
    return this.#released;
  }

  readInto(into: Uint8Array, progress: (count: number) => void): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (this.destroyed) {
        reject(this.errored ?? new Error('the body was given up'));
        return;
      }
      let filled = 0;
      const held = this.#held;
      if (held !== undefined) {
        filled = Math.min(held.byteLength, into.byteLength);
        into.set(held.subarray(0, filled));
        this.#held = filled < held.byteLength ? held.subarray(filled) : undefined;
        progress(filled);
      }
      if (filled === into.byteLength || this.#released) {
        resolve();
        this.#doneWith();
        return;
      }
      const want = into.byteLength - filled;
      this.target = into.subarray(filled, filled + Math.min(this.#unread, want));
      this.#direct = { resolve, reject, progress };
      this.connection.resume();
    });
  }

  /** `count` bytes were read into `buffer`: the target, or the connection's scratch. */
  received(count: number, buffer: Uint8Array): boolean {
    if (count > this.#unread) {
      this.destroy(new Error('the server sent more bytes than its answer has'));
      return false;
    }
    this.#unread -= count;
    const direct = this.#direct;
    let more: boolean;
    if (direct === undefined) {
      more = this.push(Buffer.from(buffer.subarray(0, count)));
    } else {
      let target = this.target as Uint8Array;
      let taken = count;
      if (buffer !== target) {
        // Read into the scratch, whose read was asked for before this mode began: copied once.
        taken = Math.min(count, target.byteLength);
        target.set(buffer.subarray(0, taken));
        if (taken < count) this.#held = Buffer.from(buffer.subarray(taken, count));
      }
      target = target.subarray(taken);
      this.target = target;
      direct.progress(taken);
      more = target.byteLength > 0 && this.#unread !== 0;
      if (!more) {
        this.target = undefined;
        this.#direct = undefined;
        direct.resolve();
      }
    }
    if (this.#unread === 0) {
      this.#release(true);
      if (direct === undefined) this.push(null);
      else if (!more) this.#doneWith();
      // The connection is idle now (kept or closed): it reads on, to see a server close it.
      return true;
    }
    if (direct !== undefined && !more) this.#doneWith();
    return more;
  }

  /** The connection failed or closed before the body was whole. */
  broken(error: Error): void {
    if (this.#released) return;
    this.destroy(error);
  }

  override _read(): void {
    const held = this.#held;
    this.#held = undefined;
    if (held !== undefined && !this.push(held)) return;
    if (this.#released) this.push(null);
    else this.connection.resume();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    const direct = this.#direct;
    this.#direct = undefined;
    this.target = undefined;
    this.#release(false);
    direct?.reject(error ?? new Error('the body was given up'));
    callback(error);
  }

  /**
   * A body read into memory is done with once its caller's buffer is full: closed, so that nothing
   * waits on it; a connection with bytes of it still unread cannot be reused, and is closed too.
   */
  #doneWith(): void {
    this.destroy();
  }

  #release(reusable: boolean): void {
    if (this.#released) return;
    this.#released = true;
    this.connection.bodyDone(reusable && this.keepAlive);
  }
}
