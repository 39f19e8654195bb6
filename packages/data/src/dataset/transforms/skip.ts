import type { DatasetIterator } from '../../protocols.js';
import { CountingIterator } from '../counting-iterator.js';
import { DONE } from '../dataset-iterator-base.js';

/**
 * `IterDataset.skip`: drops the first `count` elements (tf.data's `skip`). The first `next()` reads
 * and discards them. State: `{ parent, skipped }`, the number dropped so far.
 */
export class SkipIterator<T> extends CountingIterator<T> {
  readonly #toSkip: number;

  constructor(parent: DatasetIterator<T>, toSkip: number) {
    super(parent, 'Skip', 'skipped');
    this.#toSkip = toSkip;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    while (this.count < this.#toSkip) {
      if ((await this.parent.next()).done) return DONE;
      this.count++;
    }
    return this.parent.next();
  }

  toString(): string {
    return `${this.parent} -> Skip(${this.#toSkip})`;
  }
}
