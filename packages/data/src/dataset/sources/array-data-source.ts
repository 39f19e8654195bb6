import { invalidArgument } from '@edl/common';
import type { RandomAccessDataSource } from '../../protocols.js';

/**
 * A random-access source over any array or array-like (typed arrays included), the analogue of
 * passing a Python sequence to Grain. The array is not copied: do not change it while datasets use it.
 */
export class ArrayDataSource<T> implements RandomAccessDataSource<T> {
  readonly #items: ArrayLike<T>;

  constructor(items: ArrayLike<T>) {
    if (items === null || typeof items !== 'object' || !Number.isSafeInteger(items.length)) {
      invalidArgument('an array or array-like', 'items', items, 'type');
    }
    this.#items = items;
  }

  get length(): number {
    return this.#items.length;
  }

  get(index: number): T {
    return this.#items[index] as T;
  }

  toString(): string {
    return `ArrayDataSource(${this.#items.length})`;
  }
}
