import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import type { MaybePromise } from '../maybe-promise.js';
import { copyState, expectStateObject, stateCount, stateObject } from '../state.js';

/** Splits one element into any number of elements (sync or async). */
export type FlatMapFn<T, U> = (value: T) => MaybePromise<Iterable<U>>;

/**
 * `IterDataset.flatMap`: replaces each parent element by the elements `fn` returns for it, in order
 * (Grain's `FlatMapIterDataset`, tf.data's `flat_map` with an iterable in place of a dataset).
 *
 * State: `{ parent, offset }`: the parent's state before the element being split and how many of its
 * outputs were returned. A restore re-reads that one element and calls `fn` again (so `fn` must be
 * deterministic), then skips `offset` outputs. `unbatch` and `rebatch` are built on it.
 */
export class FlatMapIterator<T, U> extends DatasetIteratorBase<U> {
  readonly #parent: DatasetIterator<T>;
  readonly #fn: FlatMapFn<T, U>;
  readonly #name: string;
  /** Outputs of the element being split; undefined between elements and after a restore. */
  #outputs: U[] | undefined;
  /** The parent's state before the element being split. */
  #elementStart: JsonObject | undefined;
  /** Outputs returned of the element being split (or to skip, after a restore). */
  #offset = 0;

  /** `name` is the step `toString()` and state errors show, e.g. "FlatMap" or "Unbatch". */
  constructor(parent: DatasetIterator<T>, fn: FlatMapFn<T, U>, name = 'FlatMap') {
    super();
    this.#parent = parent;
    this.#fn = fn;
    this.#name = name;
  }

  protected async advance(): Promise<IteratorResult<U>> {
    while (this.#outputs === undefined || this.#offset >= this.#outputs.length) {
      if (this.#outputs !== undefined) {
        this.#outputs = undefined;
        this.#offset = 0;
      }
      const start = this.#parent.getState();
      const result = await this.#parent.next();
      if (result.done) return DONE;
      this.#outputs = [...(await this.#fn(result.value))];
      this.#elementStart = start;
    }
    const value = this.#outputs[this.#offset++]!;
    if (this.#offset === this.#outputs.length) {
      // Done with this element: a state saved now names the parent after it and replays nothing.
      this.#outputs = undefined;
      this.#offset = 0;
    }
    return { done: false, value };
  }

  getState(): JsonObject {
    const parent =
      this.#outputs !== undefined && this.#elementStart !== undefined
        ? copyState(this.#elementStart)
        : this.#parent.getState();
    return { parent, offset: this.#offset };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, this.#name);
    const offset = stateCount(checked, 'offset', this.#name);
    this.#parent.setState(stateObject(checked, 'parent', this.#name));
    this.#outputs = undefined;
    this.#elementStart = undefined;
    this.#offset = offset;
  }

  toString(): string {
    return `${this.#parent} -> ${this.#name}`;
  }
}
