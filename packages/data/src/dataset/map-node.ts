import type { RandomAccessDataSource } from '../protocols.js';

/**
 * What a `MapDataset` is made of: a random-access source whose `get` returns `undefined` for a hole
 * (an element removed by `filter`). Unlike a plain source, a node accepts any index >= 0: index
 * `e * length + j` is element `j` of epoch `e`, which is how `repeat` re-reads a dataset and how
 * `shuffle` draws a new permutation per epoch (Grain's convention).
 */
export type MapNode<T> = RandomAccessDataSource<T | undefined>;

/** Epoch and offset of a node index; an infinite node has one endless epoch. */
export function splitIndex(index: number, length: number): [epoch: number, offset: number] {
  if (index < length) return [0, index];
  const epoch = Math.floor(index / length);
  return [epoch, index - epoch * length];
}

/** The node index of element `offset` of epoch `epoch`; an infinite node ignores the epoch. */
export function joinIndex(epoch: number, length: number, offset: number): number {
  return epoch === 0 || length === Number.POSITIVE_INFINITY ? offset : epoch * length + offset;
}

/** How a user source names itself in a chain: its own `toString()`, else its class name. */
export function describeSource(source: object): string {
  const text = String(source);
  return text === '[object Object]' ? (source.constructor?.name ?? 'DataSource') : text;
}
