import { checkBoolean, checkInteger, checkNumber, checkOptions } from '@edl/common';
import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { BatchIterator } from './batch.js';

/** A variable-length numeric sequence: a number array or a typed array. */
export type NumericSequence = ArrayLike<number>;

/** Options of `paddedBatch`. */
export interface PaddedBatchOptions {
  /** Pad every row to this length (tf.data's `padded_shapes`); default: the longest in the batch. */
  readonly paddedLength?: number;
  /** The value padding is filled with (default 0). */
  readonly paddingValue?: number;
  /** Drop a last batch smaller than `size` (default false). */
  readonly dropRemainder?: boolean;
}

/** `PaddedBatchOptions` checked, with defaults. */
export interface ResolvedPaddedBatchOptions {
  readonly paddedLength: number | undefined;
  readonly paddingValue: number;
  readonly dropRemainder: boolean;
}

/** Checks `paddedBatch` options ("Expected a positive integer for options.paddedLength ..."). */
export function resolvePaddedBatchOptions(
  options: PaddedBatchOptions | undefined,
): ResolvedPaddedBatchOptions {
  const o = checkOptions(options, 'options', ['paddedLength', 'paddingValue', 'dropRemainder']);
  return {
    paddedLength:
      o.paddedLength === undefined ? undefined : checkInteger(o.paddedLength, 'options.paddedLength', 1),
    paddingValue: o.paddingValue === undefined ? 0 : checkNumber(o.paddingValue, 'options.paddingValue'),
    dropRemainder: checkBoolean(o.dropRemainder, 'options.dropRemainder', false),
  };
}

/**
 * Pads `rows` with `paddingValue` to `length` (default: the longest row). A row longer than `length`
 * is a `DatasetError` naming `owner` and the row, as tf.data fails on an element over its padded shape.
 */
export function padRows(
  rows: readonly NumericSequence[],
  length: number | undefined,
  paddingValue: number,
  owner: string,
): number[][] {
  const longest = rows.reduce((max, row) => Math.max(max, row.length), 0);
  const target = length ?? longest;
  return rows.map((row, k) => {
    if (row.length > target) {
      throw new DatasetError(
        'ERR_BAD_ELEMENT',
        `${owner}: row ${k} of the batch has ${row.length} values, more than the padded length ${target}`,
      );
    }
    const padded = Array.from(row);
    for (let i = row.length; i < target; i++) padded.push(paddingValue);
    return padded;
  });
}

/**
 * `IterDataset.paddedBatch`: tf.data's `padded_batch` for 1-D numeric sequences: `size` consecutive
 * elements padded with `paddingValue` to the longest of the batch, or to `paddedLength`. A batch is
 * made in one `next()`, so the state is the batch's: `{ parent }`.
 */
export class PaddedBatchIterator extends DatasetIteratorBase<number[][]> {
  readonly #parent: DatasetIterator<NumericSequence>;
  readonly #size: number;
  readonly #options: ResolvedPaddedBatchOptions;
  readonly #batches: BatchIterator<NumericSequence>;

  constructor(parent: DatasetIterator<NumericSequence>, size: number, options: ResolvedPaddedBatchOptions) {
    super();
    this.#parent = parent;
    this.#size = size;
    this.#options = options;
    this.#batches = new BatchIterator(parent, size, options);
  }

  protected async advance(): Promise<IteratorResult<number[][]>> {
    const result = await this.#batches.next();
    if (result.done) return DONE;
    const { paddedLength, paddingValue } = this.#options;
    return { done: false, value: padRows(result.value, paddedLength, paddingValue, String(this)) };
  }

  getState(): JsonObject {
    return this.#batches.getState();
  }

  protected restore(state: JsonObject): void {
    this.#batches.setState(state);
  }

  toString(): string {
    const length =
      this.#options.paddedLength === undefined ? '' : `, paddedLength=${this.#options.paddedLength}`;
    return `${this.#parent} -> PaddedBatch(${this.#size}${length})`;
  }
}
