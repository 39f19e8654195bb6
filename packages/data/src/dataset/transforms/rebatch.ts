import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase } from '../dataset-iterator-base.js';
import { BatchIterator, type BatchOptions } from './batch.js';
import { unbatchIterator } from './unbatch.js';

/**
 * `IterDataset.rebatch`: regroups the items of iterable parent elements (batches) into arrays of
 * `size` (tf.data's `rebatch`, Grain's `RebatchIterDataset`): an unbatch followed by a batch, so a
 * batch may span parent elements. State: `{ parent: { parent, offset } }`, the batch's state over the
 * unbatch's; a restore re-reads at most the one parent batch being split.
 */
export class RebatchIterator<U> extends DatasetIteratorBase<U[]> {
  readonly #parent: DatasetIterator<Iterable<U>>;
  readonly #size: number;
  readonly #dropRemainder: boolean;
  readonly #batches: BatchIterator<U>;

  constructor(parent: DatasetIterator<Iterable<U>>, size: number, options: BatchOptions = {}) {
    super();
    this.#parent = parent;
    this.#size = size;
    this.#dropRemainder = options.dropRemainder ?? false;
    this.#batches = new BatchIterator(unbatchIterator(parent), size, options);
  }

  protected advance(): Promise<IteratorResult<U[]>> {
    return this.#batches.next();
  }

  getState(): JsonObject {
    return this.#batches.getState();
  }

  protected restore(state: JsonObject): void {
    this.#batches.setState(state);
  }

  toString(): string {
    return `${this.#parent} -> Rebatch(${this.#size}${this.#dropRemainder ? ', dropRemainder' : ''})`;
  }
}
