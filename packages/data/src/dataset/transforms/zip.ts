import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { expectStateObject, stateArray } from '../state.js';

/**
 * `IterDataset.zip`: element `i` is the tuple of element `i` of every parent (Grain's `ZipIterDataset`,
 * tf.data's `zip`); it ends with the shortest parent. The parents are read one after the other, so
 * the order of side effects is fixed. State: `{ parents }`, one state per parent.
 */
export class ZipIterator<T extends unknown[]> extends DatasetIteratorBase<T> {
  readonly #parents: readonly DatasetIterator<unknown>[];

  constructor(parents: readonly DatasetIterator<unknown>[]) {
    super();
    this.#parents = parents;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    const values: unknown[] = [];
    for (const parent of this.#parents) {
      const result = await parent.next();
      if (result.done) return DONE;
      values.push(result.value);
    }
    return { done: false, value: values as T };
  }

  getState(): JsonObject {
    return { parents: this.#parents.map((parent) => parent.getState()) };
  }

  protected restore(state: JsonObject): void {
    const owner = 'Zip';
    const states = stateArray(expectStateObject(state, owner), 'parents', owner, this.#parents.length);
    const checked = states.map((entry, k) => expectStateObject(entry, `${owner} parent ${k}`));
    checked.forEach((entry, k) => {
      this.#parents[k]!.setState(entry);
    });
  }

  toString(): string {
    return `Zip(${this.#parents.map(String).join(', ')})`;
  }
}
