import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { expectStateObject, stateCount, stateObject } from '../state.js';

/**
 * `IterDataset.skip`: drops the first `count` elements (tf.data's `skip`). The first `next()` reads
 * and discards them. State: `{ parent, skipped }`, the number dropped so far.
 */
export class SkipIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  readonly #count: number;
  #skipped = 0;

  constructor(parent: DatasetIterator<T>, count: number) {
    super();
    this.#parent = parent;
    this.#count = count;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    while (this.#skipped < this.#count) {
      if ((await this.#parent.next()).done) return DONE;
      this.#skipped++;
    }
    return this.#parent.next();
  }

  getState(): JsonObject {
    return { parent: this.#parent.getState(), skipped: this.#skipped };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'Skip');
    const skipped = stateCount(checked, 'skipped', 'Skip');
    this.#parent.setState(stateObject(checked, 'parent', 'Skip'));
    this.#skipped = skipped;
  }

  toString(): string {
    return `${this.#parent} -> Skip(${this.#count})`;
  }
}
