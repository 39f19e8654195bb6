import type { DatasetIterator } from '../../protocols.js';
import { CountingIterator } from '../counting-iterator.js';
import { DONE } from '../dataset-iterator-base.js';

/** `IterDataset.take`: the first `count` elements. State: `{ parent, taken }`. */
export class TakeIterator<T> extends CountingIterator<T> {
  readonly #limit: number;

  constructor(parent: DatasetIterator<T>, limit: number) {
    super(parent, 'Take', 'taken');
    this.#limit = limit;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.count >= this.#limit) return DONE;
    const result = await this.parent.next();
    if (result.done) return DONE;
    this.count++;
    return result;
  }

  toString(): string {
    return `${this.parent} -> Take(${this.#limit})`;
  }
}
