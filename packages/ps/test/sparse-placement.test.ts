import { describe, expect, it } from 'vitest';
import { fmix32, hashRowId } from '../src/sparse/id-hash.js';
import { placeDenseVariables, shardOfId } from '../src/sparse/placement.js';

/** murmur3's fmix32 in BigInt arithmetic, written from its definition: a check of the Math.imul version. */
function fmix32Reference(value: bigint): bigint {
  const mask = 0xffffffffn;
  let h = value & mask;
  h ^= h >> 16n;
  h = (h * 0x85ebca6bn) & mask;
  h ^= h >> 13n;
  h = (h * 0xc2b2ae35n) & mask;
  h ^= h >> 16n;
  return h;
}

describe('row placement', () => {
  it('hashes ids as README.md specifies, checked against a BigInt rendering of the formula', () => {
    for (const id of [0, 1, 77, 2 ** 32 - 1, 2 ** 32, 3 * 2 ** 40 + 12345, Number.MAX_SAFE_INTEGER]) {
      const big = BigInt(id);
      const low = big & 0xffffffffn;
      const high = big >> 32n;
      const expected = fmix32Reference(low + fmix32Reference(high ^ 0x5ba4d3e1n));
      expect(hashRowId(id, 0x5ba4d3e1)).toBe(Number(expected));
      expect(shardOfId(id, 7)).toBe(Number(expected % 7n));
      expect(fmix32(id >>> 0)).toBe(Number(fmix32Reference(low)));
    }
  });

  it('spreads consecutive and strided ids evenly over the shards', () => {
    for (const stride of [1, 4, 1024]) {
      const counts = new Array<number>(4).fill(0);
      for (let i = 0; i < 100_000; i++) counts[shardOfId(i * stride, 4)]!++;
      // A fair split puts 25,000 on each; 3 standard deviations are about 410.
      for (const count of counts) expect(Math.abs(count - 25_000)).toBeLessThan(500);
    }
  });

  it('rejects ids that are not row ids and shard counts below 1', () => {
    expect(() => shardOfId(-1, 2)).toThrow(
      `Expected an integer in [0, ${Number.MAX_SAFE_INTEGER}] for id but received -1`,
    );
    expect(() => shardOfId(3, 0)).toThrow('Expected a positive integer for numShards but received 0');
  });
});

describe('placeDenseVariables', () => {
  // The shapes of a small CTR model's dense part: a few large kernels and many small vectors.
  const sizes: Record<string, number> = {
    'deep/dense_1/kernel': 416 * 400,
    'deep/dense_2/kernel': 400 * 400,
    'deep/dense_3/kernel': 400 * 400,
    'deep/dense_4/kernel': 400,
    'deep/dense_1/bias': 400,
    'deep/dense_2/bias': 400,
    'deep/dense_3/bias': 400,
    'deep/dense_4/bias': 1,
    'wide/kernel': 10_000,
    'wide/bias': 1,
  };

  it('places largest first on the least-loaded shard: the spread is at most the largest variable', () => {
    const { shardOf, loadPerShard } = placeDenseVariables(sizes, 3);
    expect([...shardOf.keys()].sort()).toEqual(Object.keys(sizes).sort());
    const recomputed = [0, 0, 0];
    for (const [name, shard] of shardOf) recomputed[shard]! += sizes[name]!;
    expect(loadPerShard).toEqual(recomputed);
    const largest = Math.max(...Object.values(sizes));
    expect(Math.max(...loadPerShard) - Math.min(...loadPerShard)).toBeLessThanOrEqual(largest);
    // The three big kernels land on three different shards.
    const bigShards = new Set(
      ['deep/dense_1/kernel', 'deep/dense_2/kernel', 'deep/dense_3/kernel'].map((n) => shardOf.get(n)),
    );
    expect(bigShards.size).toBe(3);
  });

  it('depends on names and sizes only, not on the order they are given in', () => {
    const reversed = new Map(Object.entries(sizes).reverse());
    expect(placeDenseVariables(reversed, 4).shardOf).toEqual(placeDenseVariables(sizes, 4).shardOf);
  });

  it('puts everything on shard 0 of 1, and leaves shards empty when there are fewer variables', () => {
    expect(placeDenseVariables(sizes, 1).loadPerShard).toEqual([
      Object.values(sizes).reduce((a, b) => a + b),
    ]);
    expect(placeDenseVariables({ a: 5, b: 3 }, 4).loadPerShard).toEqual([5, 3, 0, 0]);
  });

  it('rejects negative sizes, naming the variable', () => {
    expect(() => placeDenseVariables({ w: -1 }, 2)).toThrow(/the size of variable 'w'/);
  });
});
