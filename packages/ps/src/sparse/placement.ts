import { checkInteger, checkNumber, invalidArgument } from '@edl/common';
import { hashRowId, isRowId, MAX_ROW_ID } from './id-hash.js';

/** The salt of {@link shardOfId}, so that placement is independent of the initializer's hashes. */
const SHARD_SALT = 0x5ba4d3e1;

/**
 * The parameter-server shard that holds embedding row `id` of every table:
 * `hashRowId(id, 0x5ba4d3e1) % numShards` (see packages/ps/README.md). A hash rather than
 * `id % numShards` spreads ids that share a stride (all even ids, say) over every shard.
 */
export function shardOfId(id: number, numShards: number): number {
  if (!isRowId(id)) invalidArgument(`an integer in [0, ${MAX_ROW_ID}]`, 'id', id, 'range');
  checkInteger(numShards, 'numShards', 1);
  return hashRowId(id, SHARD_SALT) % numShards;
}

/** Where {@link placeDenseVariables} put each dense variable, and the size each shard holds. */
export interface DensePlacement {
  /** Variable name -> shard index. */
  readonly shardOf: ReadonlyMap<string, number>;
  /** The summed sizes per shard, in the unit of the sizes given. */
  readonly loadPerShard: readonly number[];
}

/**
 * Places dense variables on `numShards` shards by size: largest first, each onto the shard that
 * holds least so far (the lower index on a tie; equal sizes in name order), so the result depends
 * only on the names and sizes. ElasticDL placed variables by a hash of their names, which can put
 * the large ones together and leave one shard far behind the others (elasticdl#1500); greedy
 * placement keeps the most loaded shard within the largest variable of an even share.
 *
 * @param sizes - variable name -> size (elements or bytes: the loads come back in the same unit).
 */
export function placeDenseVariables(
  sizes: ReadonlyMap<string, number> | Readonly<Record<string, number>>,
  numShards: number,
): DensePlacement {
  checkInteger(numShards, 'numShards', 1);
  const entries = sizes instanceof Map ? [...sizes] : Object.entries(sizes);
  for (const [name, size] of entries) checkNumber(size, `the size of variable '${name}'`, 0);
  entries.sort(([nameA, a], [nameB, b]) => b - a || (nameA < nameB ? -1 : nameA > nameB ? 1 : 0));
  const loadPerShard = new Array<number>(numShards).fill(0);
  const shardOf = new Map<string, number>();
  for (const [name, size] of entries) {
    let least = 0;
    for (let s = 1; s < numShards; s++)
      if ((loadPerShard[s] as number) < (loadPerShard[least] as number)) least = s;
    shardOf.set(name, least);
    loadPerShard[least] = (loadPerShard[least] as number) + size;
  }
  return { shardOf, loadPerShard };
}
