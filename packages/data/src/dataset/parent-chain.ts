/**
 * Serializes the calls a read-ahead iterator (prefetch, mapParallel) makes on its parent: a
 * background fill and a later restore must never run on the parent at the same time. A failed
 * operation (a deferred restore) is kept, never unhandled, and thrown by the consumer's next read.
 */
export class ParentChain {
  #tail: Promise<void> = Promise.resolve();
  /** Operations queued and not finished yet. */
  #queued = 0;
  #error: unknown;
  readonly #onSettled: () => void;

  /** `onSettled` runs after every operation, failed or not: the iterator wakes a waiting consumer. */
  constructor(onSettled: () => void) {
    this.#onSettled = onSettled;
  }

  /** Appends `operation`; it starts once every operation queued before it has settled. */
  enqueue(operation: () => void | Promise<void>): void {
    this.#queued++;
    this.#tail = this.#tail
      .then(operation)
      .catch((error: unknown) => {
        this.#error = error;
      })
      .finally(() => {
        this.#queued--;
        this.#onSettled();
      });
  }

  /** Runs `operation` at once when nothing is queued (a restore takes effect synchronously), else after. */
  runAfterQueued(operation: () => void): void {
    if (this.#queued > 0) this.enqueue(operation);
    else operation();
  }

  /** Throws, once, the error of an operation that failed since the last call. */
  throwIfFailed(): void {
    if (this.#error === undefined) return;
    const error = this.#error;
    this.#error = undefined;
    throw error;
  }
}
