/**
 * A few idle ArrayBuffers kept for the next fetch or decode to fill, so that a long remote read
 * reuses its memory instead of allocating a fresh buffer per part: fresh multi-MiB buffers are
 * external memory to V8, and their churn cost the reader most of its garbage collection; their
 * first touch costs a page fault per 4 KiB too.
 */
export class SpareBuffers {
  readonly #spares: ArrayBuffer[] = [];
  #bytes = 0;

  /**
   * @param capacity - spares kept at most.
   * @param minBytes - smaller buffers are not worth keeping.
   */
  constructor(
    private readonly capacity: number,
    private readonly minBytes: number,
  ) {}

  /** Bytes of the spares kept now. */
  get bytes(): number {
    return this.#bytes;
  }

  /** The smallest spare of at least `bytes`, taken out; undefined when none is that big. */
  take(bytes: number): ArrayBuffer | undefined {
    let best = -1;
    for (let i = 0; i < this.#spares.length; i++) {
      const size = (this.#spares[i] as ArrayBuffer).byteLength;
      if (size >= bytes && (best < 0 || size < (this.#spares[best] as ArrayBuffer).byteLength)) best = i;
    }
    return best < 0 ? undefined : this.#remove(best);
  }

  /** The most recently given spare, whatever its size (a decode grows past a small one itself). */
  takeAny(): ArrayBuffer | undefined {
    return this.#spares.length === 0 ? undefined : this.#remove(this.#spares.length - 1);
  }

  /**
   * Keeps `buffer` for a later take, if it is an ArrayBuffer worth keeping, there is room for one
   * more spare, and the spares would then hold at most `maxBytes`.
   */
  give(buffer: ArrayBufferLike, maxBytes = Number.POSITIVE_INFINITY): void {
    if (
      buffer instanceof ArrayBuffer &&
      buffer.byteLength >= this.minBytes &&
      this.#spares.length < this.capacity &&
      this.#bytes + buffer.byteLength <= maxBytes &&
      !this.#spares.includes(buffer)
    ) {
      this.#spares.push(buffer);
      this.#bytes += buffer.byteLength;
    }
  }

  /** Drops the oldest spares until they hold at most `maxBytes`. */
  trim(maxBytes: number): void {
    while (this.#bytes > maxBytes && this.#spares.length > 0) this.#remove(0);
  }

  /** Drops every spare. */
  clear(): void {
    this.#spares.length = 0;
    this.#bytes = 0;
  }

  #remove(at: number): ArrayBuffer {
    const [buffer] = this.#spares.splice(at, 1) as [ArrayBuffer];
    this.#bytes -= buffer.byteLength;
    return buffer;
  }
}
