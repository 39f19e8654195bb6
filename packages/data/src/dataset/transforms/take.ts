import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { expectStateObject, stateCount, stateObject } from '../state.js';

/** `IterDataset.take`: the first `count` elements. State: `{ parent, taken }`. */
export class TakeIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  readonly #count: number;
  #taken = 0;

  constructor(parent: DatasetIterator<T>, count: number) {
    super();
    this.#parent = parent;
    this.#count = count;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.#taken >= this.#count) return DONE;
    const result = await this.#parent.next();
    if (result.done) return DONE;
    this.#taken++;
    return result;
  }

  getState(): JsonObject {
    return { parent: this.#parent.getState(), taken: this.#taken };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'Take');
    const taken = stateCount(checked, 'taken', 'Take');
    this.#parent.setState(stateObject(checked, 'parent', 'Take'));
    this.#taken = taken;
  }

  toString(): string {
    return `${this.#parent} -> Take(${this.#count})`;
  }
}
