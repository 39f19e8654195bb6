import type { ObjectSink } from './object-sink.js';

type SinkState = 'open' | 'closing' | 'closed' | 'aborted';

/**
 * The life of every {@link ObjectSink}: writes only while open, one commit, and a failed write or
 * commit discards what was written before the failure surfaces, so no caller can forget to. A
 * subclass says how to take a chunk, commit and discard.
 */
export abstract class SinkBase implements ObjectSink {
  #state: SinkState = 'open';
  #bytesWritten = 0;
  #discarded: Promise<void> | undefined;

  protected constructor(readonly location: string) {}

  get bytesWritten(): number {
    return this.#bytesWritten;
  }

  async write(chunk: Uint8Array): Promise<void> {
    if (!(chunk instanceof Uint8Array)) throw new TypeError('chunk must be a Uint8Array');
    this.checkOpen('write to');
    if (chunk.byteLength === 0) return;
    this.#bytesWritten += chunk.byteLength;
    await this.failingDiscards(() => this.writeChunk(chunk));
  }

  async close(): Promise<void> {
    this.checkOpen('close');
    this.#state = 'closing';
    await this.failingDiscards(() => this.commit());
    this.#state = 'closed';
  }

  async abort(): Promise<void> {
    if (this.#state === 'closed') return;
    this.#state = 'aborted';
    this.#discarded ??= this.discard();
    await this.#discarded;
  }

  /** Takes the next chunk (copied or written before the promise resolves). */
  protected abstract writeChunk(chunk: Uint8Array): Promise<void>;
  /** Makes the object appear whole at its location. */
  protected abstract commit(): Promise<void>;
  /** Removes every trace of the write; called once, after a failure or an abort. */
  protected abstract discard(): Promise<void>;

  private checkOpen(action: string): void {
    if (this.#state !== 'open') {
      throw new Error(`cannot ${action} ${this.location}: the writer is ${this.#state}`);
    }
  }

  private async failingDiscards(step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (error) {
      // The failure that stopped the write is what the caller hears; a leftover it could not
      // remove (an upload that could not be aborted) is named in the same message.
      const leftover = await this.abort().then(
        () => undefined,
        (abortError: unknown) => abortError,
      );
      if (leftover !== undefined && error instanceof Error) {
        error.message += `; also: ${leftover instanceof Error ? leftover.message : String(leftover)}`;
      }
      throw error;
    }
  }
}
