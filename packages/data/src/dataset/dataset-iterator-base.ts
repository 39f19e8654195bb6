import type { DatasetIterator, JsonObject } from '../protocols.js';
import { DatasetError } from './errors.js';

/**
 * Base of every dataset iterator: serializes `next()` (a call made while another is pending waits for
 * it, like tfjs-data's SerialIterator), refuses `setState()` while a `next()` is pending, and is its
 * own async iterable. Subclasses implement `advance()`, `getState()`, `restore()` and `toString()`.
 */
export abstract class DatasetIteratorBase<T> implements DatasetIterator<T>, AsyncIterableIterator<T> {
  #tail: Promise<unknown> = Promise.resolve();
  #pending = 0;

  /** The next element; calls are served one after the other in call order. */
  next(): Promise<IteratorResult<T>> {
    this.#pending++;
    const result = this.#tail.then(() => this.advance());
    const settle = () => {
      this.#pending--;
    };
    this.#tail = result.then(settle, settle);
    return result;
  }

  /** Restores a state written by `getState()` of an iterator of the same chain. */
  setState(state: JsonObject): void {
    if (this.#pending > 0) {
      throw new DatasetError('ERR_ITERATOR_BUSY', `Cannot set the state of ${this} while next() is pending`);
    }
    this.restore(state);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  /** The current position as plain JSON of a fixed shape. */
  abstract getState(): JsonObject;
  /** Computes the next element; never called concurrently. */
  protected abstract advance(): Promise<IteratorResult<T>>;
  /** Applies a state; never called while `advance()` runs. */
  protected abstract restore(state: JsonObject): void;
  /** The chain of transformations, e.g. "RangeDataSource(0, 10, 1) -> Map -> Batch(32)". */
  abstract toString(): string;
}

/** The iterator result that ends an iteration. */
export const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
