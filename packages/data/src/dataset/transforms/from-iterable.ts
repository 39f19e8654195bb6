import type { JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { expectStateObject, stateCount } from '../state.js';

/** Makes a fresh (async) iterable over the same elements each time it is called. */
export type IterableFactory<T> = () => AsyncIterable<T> | Iterable<T>;

/**
 * `IterDataset.fromIterable`: any (async) iterable factory, e.g. an async generator function. State:
 * `{ consumed }`, the number of elements returned; a restore makes a fresh iterable and skips that
 * many, so resumption is exact when the factory yields the same sequence every time. For a source
 * that can seek, implement a `DatasetIterator` and use `IterDataset.fromIterator` instead.
 */
export class FromIterableIterator<T> extends DatasetIteratorBase<T> {
  readonly #factory: IterableFactory<T>;
  readonly #name: string;
  #iterator: AsyncIterator<T> | Iterator<T> | undefined;
  #consumed = 0;
  /** Elements of a fresh iterable still to skip after a restore. */
  #skip = 0;

  constructor(factory: IterableFactory<T>, name: string) {
    super();
    this.#factory = factory;
    this.#name = name;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.#iterator === undefined) {
      const iterable = this.#factory();
      this.#iterator =
        Symbol.asyncIterator in iterable
          ? (iterable as AsyncIterable<T>)[Symbol.asyncIterator]()
          : (iterable as Iterable<T>)[Symbol.iterator]();
    }
    for (; this.#skip > 0; this.#skip--) {
      if ((await this.#iterator.next()).done) {
        this.#skip = 0;
        return DONE;
      }
    }
    const result = await this.#iterator.next();
    if (result.done) return DONE;
    this.#consumed++;
    return { done: false, value: result.value };
  }

  getState(): JsonObject {
    return { consumed: this.#consumed };
  }

  protected restore(state: JsonObject): void {
    const consumed = stateCount(expectStateObject(state, this.#name), 'consumed', this.#name);
    const iterator = this.#iterator;
    this.#iterator = undefined;
    // Let a generator run its finally blocks; its result does not matter.
    void Promise.resolve(iterator?.return?.()).catch(() => undefined);
    this.#consumed = consumed;
    this.#skip = consumed;
  }

  toString(): string {
    return this.#name;
  }
}
