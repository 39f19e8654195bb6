import type { RecordBatch } from './record-batch.js';

const DONE: IteratorReturnResult<undefined> = Object.freeze({ value: undefined, done: true });

/**
 * Yields the records of a stream of batches one by one. Hand-written rather than an async generator:
 * while a batch lasts, `next()` answers with an already-resolved promise, which costs less than half
 * of a generator's `yield` per record. A batch source that throws ends the iteration with that error
 * after every record of the batches before it.
 */
export class RecordIterator implements AsyncIterableIterator<Uint8Array> {
  readonly #batches: AsyncIterator<RecordBatch, void, undefined>;
  #batch: RecordBatch | undefined;
  #data: Uint8Array = new Uint8Array(0);
  #bounds: Uint32Array = new Uint32Array(0);
  #next = 0;
  #done = false;
  #pending: Promise<IteratorResult<Uint8Array, undefined>> | undefined;

  /** @param batches - the batches to flatten, in order. */
  constructor(batches: AsyncIterator<RecordBatch, void, undefined>) {
    this.#batches = batches;
  }

  /** The iterator itself, so it works in `for await`. */
  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The next record, as a view into its batch's buffer. */
  next(): Promise<IteratorResult<Uint8Array, undefined>> {
    if (this.#pending !== undefined) return this.#pending.then(() => this.next());
    const i = this.#next;
    if (this.#batch !== undefined && 2 * i < this.#bounds.length) {
      this.#next = i + 1;
      const begin = this.#bounds[2 * i] as number;
      const end = this.#bounds[2 * i + 1] as number;
      const data = this.#data;
      return Promise.resolve({
        value: new Uint8Array(data.buffer, data.byteOffset + begin, end - begin),
        done: false,
      });
    }
    if (this.#done) return Promise.resolve(DONE);
    const pending = this.#fetch().finally(() => {
      this.#pending = undefined;
    });
    this.#pending = pending;
    return pending;
  }

  /** Stops early (a `break` in `for await`): the batch source is closed too. */
  async return(): Promise<IteratorResult<Uint8Array, undefined>> {
    if (!this.#done) {
      this.#done = true;
      this.#batch = undefined;
      await this.#batches.return?.();
    }
    return DONE;
  }

  async #fetch(): Promise<IteratorResult<Uint8Array, undefined>> {
    for (;;) {
      let step: IteratorResult<RecordBatch, void>;
      try {
        step = await this.#batches.next();
      } catch (error) {
        this.#done = true;
        this.#batch = undefined;
        throw error;
      }
      if (step.done === true) {
        this.#done = true;
        this.#batch = undefined;
        return DONE;
      }
      if (step.value.length === 0) continue;
      this.#batch = step.value;
      this.#data = step.value.data;
      this.#bounds = step.value.bounds;
      this.#next = 0;
      this.#pending = undefined;
      return this.next();
    }
  }
}
