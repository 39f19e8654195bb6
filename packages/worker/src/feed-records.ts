import type { DatasetIterator, JsonObject, RecordBatchLike } from '@edl/data';
import { WorkerError } from './errors.js';

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
const noop = (): void => {};

/**
 * The iterator of the shared records dataset: records served from the batch at hand, one resolved
 * promise each, and the next batch read only when the batch runs dry (one step of the batch stream
 * per batch, not per record). Each batch is handed to `hold` when it arrives, so that the feed can
 * release it once its records are consumed. Calls to `next()` are served in call order.
 *
 * The dataset is fed by the master's tasks: it cannot be rewound, so `setState()` throws.
 */
export class FeedRecordsIterator<TRecord> implements DatasetIterator<TRecord> {
  readonly #open: () => AsyncIterator<RecordBatchLike<TRecord>>;
  readonly #hold: (batch: RecordBatchLike<TRecord>) => void;
  readonly #name: string;
  #batches: AsyncIterator<RecordBatchLike<TRecord>> | undefined;
  #batch: RecordBatchLike<TRecord> | undefined;
  #index = 0;
  #returned = 0;
  #done = false;
  /** Settles when the last slow `next()` (one that reads a batch) has; undefined when none is pending. */
  #tail: Promise<void> | undefined;

  /**
   * @param open - starts the stream of batches (on the first `next()`).
   * @param hold - called with each batch as it arrives, before any of its records is returned.
   * @param name - the dataset's name, for `toString()` and errors.
   */
  constructor(
    open: () => AsyncIterator<RecordBatchLike<TRecord>>,
    hold: (batch: RecordBatchLike<TRecord>) => void,
    name: string,
  ) {
    this.#open = open;
    this.#hold = hold;
    this.#name = name;
  }

  next(): Promise<IteratorResult<TRecord>> {
    if (this.#tail === undefined) {
      const batch = this.#batch;
      if (batch !== undefined && this.#index < batch.length) {
        this.#returned++;
        return Promise.resolve({ done: false, value: batch.get(this.#index++) });
      }
    }
    const result = (this.#tail ?? Promise.resolve()).then(() => this.#advance());
    const tail = result.then(noop, noop);
    this.#tail = tail;
    void tail.then(() => {
      if (this.#tail === tail) this.#tail = undefined;
    });
    return result;
  }

  async return(): Promise<IteratorResult<TRecord>> {
    this.#done = true;
    this.#batch = undefined;
    const batches = this.#batches;
    this.#batches = undefined;
    await batches?.return?.();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  getState(): JsonObject {
    return { consumed: this.#returned };
  }

  setState(_state: JsonObject): void {
    throw new WorkerError(
      'DATA_ERROR',
      `${this.#name} reads the master's tasks: its position cannot be restored`,
    );
  }

  toString(): string {
    return this.#name;
  }

  async #advance(): Promise<IteratorResult<TRecord>> {
    for (;;) {
      if (this.#done) return DONE;
      const batch = this.#batch;
      if (batch !== undefined && this.#index < batch.length) {
        this.#returned++;
        return { done: false, value: batch.get(this.#index++) };
      }
      this.#batch = undefined;
      this.#batches ??= this.#open();
      let result: IteratorResult<RecordBatchLike<TRecord>>;
      try {
        result = await this.#batches.next();
      } catch (error) {
        this.#done = true;
        throw error;
      }
      if (result.done) {
        this.#done = true;
        return DONE;
      }
      this.#hold(result.value);
      this.#batch = result.value;
      this.#index = 0;
    }
  }
}
