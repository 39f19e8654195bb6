/**
 * A few idle ArrayBuffers kept for the next fetch or decode to fill, so that a long remote read
 * reuses its memory instead of allocating a fresh buffer per part: fresh multi-MiB buffers are
 * external memory to V8, and their churn cost the reader most of its garbage collection.
 */
export class SpareBuffers {
  readonly #spares: ArrayBuffer[] = [];

  /**
   * @param capacity - spares kept at most (the bound on the idle memory they hold).
   * @param minBytes - smaller buffers are not worth keeping.
   */
  constructor(
    private readonly capacity: number,
    private readonly minBytes: number,
  ) {}

  /** The smallest spare of at least `bytes`, taken out; undefined when none is that big. */
  take(bytes: number): ArrayBuffer | undefined {
    let best = -1;
    for (let i = 0; i < this.#spares.length; i++) {
      const size = (this.#spares[i] as ArrayBuffer).byteLength;
      if (size >= bytes && (best < 0 || size < (this.#spares[best] as ArrayBuffer).byteLength)) best = i;
    }
    return best < 0 ? undefined : this.#spares.splice(best, 1)[0];
  }

  /** The most recently given spare, whatever its size (a decode grows past a small one itself). */
  takeAny(): ArrayBuffer | undefined {
    return this.#spares.pop();
  }

  /** Keeps `buffer` for a later take, if it is an ArrayBuffer worth keeping and there is room. */
  give(buffer: ArrayBufferLike): void {
    if (
      buffer instanceof ArrayBuffer &&
      buffer.byteLength >= this.minBytes &&
      this.#spares.length < this.capacity &&
      !this.#spares.includes(buffer)
    ) {
      this.#spares.push(buffer);
    }
  }

  /** Drops every spare. */
  clear(): void {
    this.#spares.length = 0;
  }
}
