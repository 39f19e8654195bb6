import type { DatasetIterator, JsonObject } from '../protocols.js';
import { DatasetIteratorBase } from './dataset-iterator-base.js';
import { expectStateObject, stateCount, stateObject } from './state.js';

/**
 * An iterator over one parent whose own position is one count (take's `taken`, skip's `skipped`,
 * repeat's `epoch`): its state is `{ parent, [countKey]: count }`, checked and restored here so
 * that each transform holds only its `advance()`.
 */
export abstract class CountingIterator<T> extends DatasetIteratorBase<T> {
  protected readonly parent: DatasetIterator<T>;
  /** What this iterator counts; part of its state. */
  protected count = 0;
  readonly #transform: string;
  readonly #countKey: string;

  /** `transform` names the transform in state errors, `countKey` the count in the state. */
  protected constructor(parent: DatasetIterator<T>, transform: string, countKey: string) {
    super();
    this.parent = parent;
    this.#transform = transform;
    this.#countKey = countKey;
  }

  getState(): JsonObject {
    return { parent: this.parent.getState(), [this.#countKey]: this.count };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, this.#transform);
    const count = stateCount(checked, this.#countKey, this.#transform);
    this.parent.setState(stateObject(checked, 'parent', this.#transform));
    this.count = count;
  }
}
