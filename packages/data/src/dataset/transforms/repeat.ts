import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { CountingIterator } from '../counting-iterator.js';
import { DONE } from '../dataset-iterator-base.js';
import type { MapNode } from '../map-node.js';
import type { MaybePromise } from '../maybe-promise.js';
import { copyState } from '../state.js';

/**
 * `MapDataset.repeat`: `numEpochs` times the parent (forever when omitted: the length is then
 * `Infinity`). Indices pass through unchanged: the parent maps index `e * n + j` to element `j` of
 * epoch `e`, which is what gives a shuffle below a repeat a new order each epoch.
 */
export class RepeatNode<T> implements MapNode<T> {
  readonly #parent: MapNode<T>;
  readonly #numEpochs: number | undefined;
  readonly length: number;

  constructor(parent: MapNode<T>, numEpochs?: number) {
    this.#parent = parent;
    this.#numEpochs = numEpochs;
    const n = parent.length;
    this.length = n === 0 ? 0 : numEpochs === undefined ? Number.POSITIVE_INFINITY : n * numEpochs;
  }

  get(index: number): MaybePromise<T | undefined> {
    return this.#parent.get(index);
  }

  toString(): string {
    return `${this.#parent} -> Repeat(${this.#numEpochs ?? 'forever'})`;
  }
}

/**
 * `IterDataset.repeat`: `numEpochs` passes over the parent (forever when omitted), like tf.data's
 * `repeat`. A new pass restores the parent to the state it had when this iterator was made, so the
 * parent must replay the same sequence (a window shuffle below repeats its order; shuffle after the
 * repeat, or use `MapDataset.repeat` under a global shuffle, for a new order per epoch). An empty
 * parent ends the iteration instead of looping. State: `{ parent, epoch }`.
 */
export class RepeatIterator<T> extends CountingIterator<T> {
  readonly #numEpochs: number | undefined;
  /** The parent's state at the start of a pass. */
  readonly #startState: JsonObject;

  constructor(parent: DatasetIterator<T>, numEpochs?: number) {
    super(parent, 'Repeat', 'epoch');
    this.#numEpochs = numEpochs;
    this.#startState = parent.getState();
  }

  protected async advance(): Promise<IteratorResult<T>> {
    if (this.#numEpochs !== undefined && this.count >= this.#numEpochs) return DONE;
    const result = await this.parent.next();
    if (!result.done) return result;
    this.count++;
    if (this.#numEpochs !== undefined && this.count >= this.#numEpochs) return DONE;
    this.parent.setState(copyState(this.#startState));
    // A pass that ends at once means an empty parent: stop rather than loop forever.
    return this.parent.next();
  }

  toString(): string {
    return `${this.parent} -> Repeat(${this.#numEpochs ?? 'forever'})`;
  }
}
