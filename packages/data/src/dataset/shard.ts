import { checkInteger, invalidArgument } from '@edl/common';
import { expectFinite } from './expect-finite.js';

/** Which part of a dataset one of `count` consumers reads (Grain's `ShardOptions`). */
export interface ShardOptions {
  /** This consumer, in `[0, count)`. */
  readonly index: number;
  /** Number of consumers. */
  readonly count: number;
  /** Give every shard `floor(length / count)` elements, dropping the rest (default false). */
  readonly dropRemainder?: boolean;
}

/** Validates shard options: `index` an integer in `[0, count)`, `count` a positive integer. */
export function checkShardOptions(options: ShardOptions): ShardOptions {
  if (typeof options !== 'object' || options === null) invalidArgument('shard options', 'options', options);
  checkInteger(options.count, 'options.count', 1);
  checkInteger(options.index, 'options.index', 0, options.count - 1);
  return options;
}

/**
 * The contiguous range `[start, stop)` of shard `index` of a dataset of `length` elements: shards
 * differ in size by at most one (the first `length % count` shards get one more), or all have
 * `floor(length / count)` elements with `dropRemainder`. Contiguous ranges keep each consumer's reads
 * local (one file, one chunk cache) while a shuffle above the shard still mixes globally.
 */
export function shardBounds(length: number, options: ShardOptions): [start: number, stop: number] {
  const { index, count, dropRemainder = false } = checkShardOptions(options);
  expectFinite(length, 'length');
  const base = Math.floor(length / count);
  if (dropRemainder) return [index * base, (index + 1) * base];
  const remainder = length - base * count;
  const start = index * base + Math.min(index, remainder);
  return [start, start + base + (index < remainder ? 1 : 0)];
}
