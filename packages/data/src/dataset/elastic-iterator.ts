import { checkInteger, invalidArgument } from '@edl/common';
import type { JsonObject } from '../protocols.js';
import { DatasetIteratorBase, DONE } from './dataset-iterator-base.js';
import type { MapDataset } from './map-dataset.js';
import { checkShardOptions } from './shard.js';
import { expectStateObject, stateCount } from './state.js';

/** Options of an `ElasticIterator`. */
export interface ElasticIteratorOptions {
  /** Elements consumed by all consumers together per step; a multiple of `shard.count`. */
  readonly globalBatchSize: number;
  /** This consumer and how many there are now (default: the only one). */
  readonly shard?: { readonly index: number; readonly count: number };
  /** Stop before a last global batch smaller than `globalBatchSize` (default false). */
  readonly dropRemainder?: boolean;
}

/**
 * An iterator over a `MapDataset` whose checkpoint survives a change in the number of consumers.
 *
 * All consumers advance through the dataset in lockstep, one global batch at a time: at global
 * position `g`, consumer `index` of `count` takes the elements `g + index, g + index + count, ...`
 * below `g + globalBatchSize`, and every consumer then moves `g` by `globalBatchSize`. The state is
 * only `{ globalNextIndex: g }`, the same on every consumer, so after saving it with N consumers and
 * restoring it on M (any M dividing the global batch size), every element is still seen exactly once
 * per epoch. Put `shuffle` / `repeat` on the dataset to shuffle per epoch. Holes are left out of a
 * batch; a consumer's batch that is all holes is returned empty so that steps stay aligned.
 */
export class ElasticIterator<T> extends DatasetIteratorBase<T[]> {
  readonly #dataset: MapDataset<T>;
  readonly #globalBatchSize: number;
  readonly #index: number;
  readonly #count: number;
  readonly #dropRemainder: boolean;
  #globalNextIndex = 0;

  constructor(dataset: MapDataset<T>, options: ElasticIteratorOptions) {
    super();
    const globalBatchSize = checkInteger(options?.globalBatchSize, 'options.globalBatchSize', 1);
    const shard = checkShardOptions(options.shard ?? { index: 0, count: 1 });
    if (globalBatchSize % shard.count !== 0) {
      invalidArgument(
        `a multiple of the shard count ${shard.count}`,
        'options.globalBatchSize',
        globalBatchSize,
      );
    }
    this.#dataset = dataset;
    this.#globalBatchSize = globalBatchSize;
    this.#index = shard.index;
    this.#count = shard.count;
    this.#dropRemainder = options.dropRemainder ?? false;
  }

  protected async advance(): Promise<IteratorResult<T[]>> {
    const length = this.#dataset.length;
    const start = this.#globalNextIndex;
    if (start >= length || (this.#dropRemainder && start + this.#globalBatchSize > length)) return DONE;
    const end = Math.min(start + this.#globalBatchSize, length);
    const reads: Promise<T | undefined>[] = [];
    for (let i = start + this.#index; i < end; i += this.#count) reads.push(this.#dataset.get(i));
    const values: Array<T | undefined> = await Promise.all(reads);
    this.#globalNextIndex = start + this.#globalBatchSize;
    return { done: false, value: values.filter((value): value is T => value !== undefined) };
  }

  getState(): JsonObject {
    return { globalNextIndex: this.#globalNextIndex };
  }

  protected restore(state: JsonObject): void {
    this.#globalNextIndex = stateCount(expectStateObject(state, 'Elastic'), 'globalNextIndex', 'Elastic');
  }

  toString(): string {
    return `${this.#dataset} -> Elastic(globalBatchSize=${this.#globalBatchSize}, shard=${this.#index}/${this.#count})`;
  }
}
