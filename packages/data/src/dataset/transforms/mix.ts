import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { joinIndex, type MapNode, splitIndex } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';
import type { MixSchedule } from '../mix-schedule.js';
import { expectStateObject, stateArray, stateCount } from '../state.js';

/**
 * `MapDataset.mix`: output `i` is the element the schedule assigns to it. The mixture ends where its
 * first dataset runs out; epoch `e` of the mixture reads epoch `e` of every dataset.
 */
export class MixNode<T> implements MapNode<T> {
  readonly #parents: readonly MapNode<T>[];
  readonly #schedule: MixSchedule;
  readonly length: number;

  constructor(parents: readonly MapNode<T>[], schedule: MixSchedule) {
    this.#parents = parents;
    this.#schedule = schedule;
    this.length = schedule.mixedLength(parents.map((parent) => parent.length));
  }

  get(index: number): MaybePromise<T | undefined> {
    const [epoch, offset] = splitIndex(index, this.length);
    const [k, element] = this.#schedule.locate(offset);
    const parent = this.#parents[k]!;
    return parent.get(joinIndex(epoch, parent.length, element));
  }

  toString(): string {
    return `Mix([${this.#parents.map(String).join(', ')}], counts=[${this.#schedule.counts.join(', ')}])`;
  }
}

/**
 * `IterDataset.mix`: draws from its datasets in the schedule's order and ends when the dataset whose
 * turn it is has run out. State: `{ parents: [state of each dataset], position }`.
 */
export class MixIterator<T> extends DatasetIteratorBase<T> {
  readonly #parents: readonly DatasetIterator<T>[];
  readonly #schedule: MixSchedule;
  #position = 0;

  constructor(parents: readonly DatasetIterator<T>[], schedule: MixSchedule) {
    super();
    this.#parents = parents;
    this.#schedule = schedule;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    const [k] = this.#schedule.locate(this.#position);
    const result = await this.#parents[k]!.next();
    if (result.done) return DONE;
    this.#position++;
    return result;
  }

  getState(): JsonObject {
    return { parents: this.#parents.map((parent) => parent.getState()), position: this.#position };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'Mix');
    const parents = stateArray(checked, 'parents', 'Mix', this.#parents.length);
    const position = stateCount(checked, 'position', 'Mix');
    this.#parents.forEach((parent, k) => {
      parent.setState(expectStateObject(parents[k], `Mix parent ${k}`));
    });
    this.#position = position;
  }

  toString(): string {
    return `Mix([${this.#parents.map(String).join(', ')}], counts=[${this.#schedule.counts.join(', ')}])`;
  }
}
