/**
 * Buffered, backpressure-aware output for commands that print many small pieces: pieces are gathered
 * into ~64 KiB writes, and the command waits for `drain` instead of piling up memory. A closed pipe
 * (`edl recordio cat f | head`) ends the output quietly instead of crashing.
 */
export class BufferedOutput {
  readonly #stream: NodeJS.WritableStream;
  #parts: (string | Uint8Array)[] = [];
  #size = 0;
  #closedPipe = false;
  readonly #onError = (error: Error & { code?: string }) => {
    if (error.code === 'EPIPE') this.#closedPipe = true;
    else this.#failure = error;
  };
  #failure: Error | undefined;

  /** @param stream - where the pieces go (standard output for `cat`). */
  constructor(stream: NodeJS.WritableStream) {
    this.#stream = stream;
    stream.on('error', this.#onError);
  }

  /** Whether the reader on the other end went away; the command should stop producing. */
  get closed(): boolean {
    return this.#closedPipe;
  }

  /** Queues a piece; writes when enough is gathered. */
  async write(piece: string | Uint8Array): Promise<void> {
    if (this.#closedPipe) return;
    this.#parts.push(piece);
    this.#size += piece.length;
    if (this.#size >= 65536) await this.flush();
  }

  /** Writes everything queued and waits until the stream can take more. */
  async flush(): Promise<void> {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#parts.length === 0 || this.#closedPipe) return;
    const chunk = Buffer.concat(this.#parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : p)));
    this.#parts = [];
    this.#size = 0;
    if (!this.#stream.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          this.#stream.off('drain', done);
          this.#stream.off('error', done);
          this.#stream.off('close', done);
          resolve();
        };
        this.#stream.on('drain', done);
        this.#stream.on('error', done);
        this.#stream.on('close', done);
      });
    }
    if (this.#failure !== undefined) throw this.#failure;
  }

  /**
   * Flushes what is queued. The error listener stays: a closed pipe may still report EPIPE after
   * the last write, and that must not become an uncaught exception with a stack trace.
   */
  async end(): Promise<void> {
    await this.flush();
  }
}
