import { describe, expect, it } from 'vitest';
import { epochSeed, indexShuffle } from '../../src/dataset/index-shuffle.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import { Rng } from '../../src/dataset/rng.js';
import { ArrayDataSource } from '../../src/dataset/sources/array-data-source.js';
import { RangeDataSource } from '../../src/dataset/sources/range-data-source.js';
import type { RandomAccessDataSource } from '../../src/protocols.js';
import { assertCheckpointRoundTrip, delay } from '../helpers/checkpoint.js';

/** Every element of a MapDataset by random access, holes included. */
async function all<T>(ds: MapDataset<T>, count = ds.length): Promise<Array<T | undefined>> {
  return Promise.all(Array.from({ length: count }, (_, i) => ds.get(i)));
}

/** Checks the dataset's iteration (holes skipped) against `expected`, with checkpoints at every step. */
async function expectIteration<T>(
  ds: MapDataset<T>,
  expected: T[],
  threads = 3,
  prefetch = 5,
): Promise<void> {
  const it = ds.toIterDataset({ threads, prefetch });
  const values = await assertCheckpointRoundTrip(() => it.iterator(), expected.length + 2);
  expect(values).toEqual(expected);
}

/** An async source: each get resolves after a pseudo-random number of macrotask turns. */
class SlowSource implements RandomAccessDataSource<number> {
  readonly length: number;
  inFlight = 0;
  maxInFlight = 0;
  calls = 0;
  constructor(length: number) {
    this.length = length;
  }
  async get(index: number): Promise<number> {
    this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await delay((index * 7) % 5);
    this.inFlight--;
    return index * 10;
  }
}

describe('sources', () => {
  it('RangeDataSource mirrors range()', () => {
    const cases: Array<[number, number, number]> = [
      [0, 10, 1],
      [3, 17, 4],
      [10, 0, -3],
      [5, 5, 1],
      [5, 0, 1],
    ];
    for (const [start, stop, step] of cases) {
      const expected: number[] = [];
      for (let x = start; step > 0 ? x < stop : x > stop; x += step) expected.push(x);
      const source = new RangeDataSource(start, stop, step);
      expect(source.length).toBe(expected.length);
      expect(Array.from({ length: source.length }, (_, i) => source.get(i))).toEqual(expected);
    }
    expect(String(new RangeDataSource(0, 10, 2))).toBe('RangeDataSource(0, 10, 2)');
    expect(new RangeDataSource(1, 4).describe()).toEqual({ type: 'range', start: 1, stop: 4, step: 1 });
    expect(() => new RangeDataSource(0, 10, 0)).toThrow(
      new RangeError('Expected a non-zero integer for step but received 0 of type number'),
    );
  });

  it('ArrayDataSource reads arrays and array-likes', async () => {
    const typed = new Float32Array([1.5, 2.5, 3.5]);
    expect(await all(MapDataset.source(new ArrayDataSource(typed)))).toEqual([1.5, 2.5, 3.5]);
    expect(await all(MapDataset.source(['a', 'b']))).toEqual(['a', 'b']);
    expect(await all(MapDataset.source({ length: 2, 0: 'x', 1: 'y' }))).toEqual(['x', 'y']);
    expect(() => new ArrayDataSource(42 as unknown as ArrayLike<number>)).toThrow(
      new TypeError('Expected an array or array-like for items but received 42 of type number'),
    );
  });
});

describe('MapDataset', () => {
  it('map applies the function to every element (sync and async)', async () => {
    const ds = MapDataset.range(20).map((x) => x * x);
    const expected = Array.from({ length: 20 }, (_, i) => i * i);
    expect(await all(ds)).toEqual(expected);
    await expectIteration(ds, expected);
    const asyncDs = MapDataset.range(20).map(async (x) => {
      await delay(x % 3);
      return `v${x}`;
    });
    await expectIteration(
      asyncDs,
      expected.map((_, i) => `v${i}`),
    );
  });

  it('randomMap gives each element randomness from (seed, index) only', async () => {
    const ds = MapDataset.range(30).randomMap((x, rng) => x + rng.float(), 7);
    const expected = Array.from({ length: 30 }, (_, i) => i + Rng.forIndex(7, i).float());
    expect(await all(ds)).toEqual(expected);
    // Order of computation does not matter.
    expect(await ds.get(17)).toBe(expected[17]);
    expect(await ds.get(17)).toBe(expected[17]);
    // Another seed gives other values; a later epoch gets fresh randomness.
    expect(
      await MapDataset.range(30)
        .randomMap((x, rng) => x + rng.float(), 8)
        .get(3),
    ).not.toBe(expected[3]);
    const repeated = MapDataset.range(30)
      .randomMap((x, rng) => x + rng.float(), 7)
      .repeat(2);
    expect(await repeated.get(30 + 3)).not.toBe(expected[3]);
    expect(Math.floor((await repeated.get(33))!)).toBe(3);
    await expectIteration(ds, expected);
  });

  it('filter leaves holes in random access and iteration skips them', async () => {
    const ds = MapDataset.range(25).filter((x) => x % 3 === 0);
    expect(ds.length).toBe(25);
    expect(await all(ds)).toEqual(Array.from({ length: 25 }, (_, i) => (i % 3 === 0 ? i : undefined)));
    await expectIteration(
      ds,
      Array.from({ length: 25 }, (_, i) => i).filter((x) => x % 3 === 0),
    );
    // map after filter keeps the holes and never sees them.
    const seen: number[] = [];
    const mapped = ds.map((x) => {
      seen.push(x);
      return -x;
    });
    expect(await mapped.get(4)).toBeUndefined();
    expect(await mapped.get(6)).toBe(-6);
    expect(seen).toEqual([6]);
  });

  it('batch groups consecutive elements, with and without the remainder', async () => {
    const reference = (n: number, size: number, drop: boolean) => {
      const out: number[][] = [];
      for (let i = 0; i < n; i += size)
        out.push(Array.from({ length: Math.min(size, n - i) }, (_, k) => i + k));
      return drop && n % size !== 0 ? out.slice(0, -1) : out;
    };
    for (const [n, size] of [
      [10, 3],
      [12, 4],
      [2, 5],
      [0, 3],
    ] as const) {
      for (const dropRemainder of [false, true]) {
        const ds = MapDataset.range(n).batch(size, { dropRemainder });
        const expected = reference(n, size, dropRemainder);
        expect(ds.length).toBe(expected.length);
        expect(await all(ds)).toEqual(expected);
        await expectIteration(ds, expected);
      }
    }
    // Holes are left out of a batch; an all-hole batch is a hole.
    const filtered = MapDataset.range(12)
      .filter((x) => x < 2 || x > 8)
      .batch(3);
    expect(await all(filtered)).toEqual([[0, 1], undefined, undefined, [9, 10, 11]]);
    // Batches over a source with getMany use it.
    const calls: number[][] = [];
    const source = {
      length: 7,
      get: (i: number) => i,
      getMany: (indices: readonly number[]) => {
        calls.push([...indices]);
        return indices.map((i) => i * 2);
      },
    };
    expect(await MapDataset.source(source).batch(4).get(1)).toEqual([8, 10, 12]);
    expect(calls).toEqual([[4, 5, 6]]);
  });

  it('shuffle is a permutation per epoch, and a new one every epoch under repeat', async () => {
    const n = 50;
    const ds = MapDataset.range(n).shuffle(3);
    const epoch0 = await all(ds);
    const expected0 = Array.from({ length: n }, (_, i) => indexShuffle(i, n, epochSeed(3, 0)));
    expect(epoch0).toEqual(expected0);
    expect([...epoch0].sort((a, b) => a! - b!)).toEqual(Array.from({ length: n }, (_, i) => i));
    const repeated = MapDataset.range(n).shuffle(3).repeat(3);
    expect(repeated.length).toBe(3 * n);
    const epochs = await all(repeated);
    const expected = [0, 1, 2].flatMap((e) =>
      Array.from({ length: n }, (_, i) => indexShuffle(i, n, epochSeed(3, e))),
    );
    expect(epochs).toEqual(expected);
    expect(epochs.slice(n, 2 * n)).not.toEqual(epochs.slice(0, n));
    await expectIteration(repeated, expected);
    // Epoch e of seed s is not epoch e - 1 of seed s + 1.
    const other = await all(MapDataset.range(n).shuffle(4).repeat(2), 2 * n);
    expect(other.slice(0, n)).not.toEqual(epochs.slice(n, 2 * n));
    expect(() => MapDataset.range(3).repeat().shuffle(1)).toThrow(RangeError);
  });

  it('slice takes start, stop and step like a Python slice with non-negative bounds', async () => {
    const base = Array.from({ length: 20 }, (_, i) => i * 3);
    const ds = MapDataset.source(base);
    for (const [start, stop, step] of [
      [0, 20, 1],
      [2, 15, 4],
      [5, 100, 2],
      [19, 20, 5],
      [10, 5, 1],
    ] as const) {
      const expected: number[] = [];
      for (let i = start; i < Math.min(stop, 20); i += step) expected.push(base[i]!);
      const sliced = ds.slice(start, stop, step);
      expect(await all(sliced)).toEqual(expected);
      await expectIteration(sliced, expected);
    }
    expect(await all(ds.slice(15))).toEqual(base.slice(15));
  });

  it('repeat reads the dataset numEpochs times, or forever', async () => {
    const ds = MapDataset.source(['a', 'b', 'c']).repeat(3);
    expect(ds.length).toBe(9);
    await expectIteration(ds, ['a', 'b', 'c', 'a', 'b', 'c', 'a', 'b', 'c']);
    const forever = MapDataset.source(['a', 'b']).repeat();
    expect(forever.length).toBe(Number.POSITIVE_INFINITY);
    expect(await forever.get(1_000_001)).toBe('b');
    const taken = await forever.toIterDataset().take(5).toArray();
    expect(taken).toEqual(['a', 'b', 'a', 'b', 'a']);
    expect(MapDataset.range(0).repeat().length).toBe(0);
  });

  it('concatenate puts datasets one after the other', async () => {
    const ds = MapDataset.concatenate([MapDataset.range(3), MapDataset.range(0), MapDataset.range(10, 14)]);
    const expected = [0, 1, 2, 10, 11, 12, 13];
    expect(ds.length).toBe(7);
    expect(await all(ds)).toEqual(expected);
    await expectIteration(ds, expected);
    expect(await ds.repeat(2).get(7 + 4)).toBe(11);
    const endless = MapDataset.concatenate([MapDataset.range(2), MapDataset.range(5, 7).repeat()]);
    expect(await endless.toIterDataset().take(6).toArray()).toEqual([0, 1, 5, 6, 5, 6]);
    expect(() => MapDataset.concatenate([MapDataset.range(2).repeat(), MapDataset.range(2)])).toThrow(
      new RangeError(
        'Expected a dataset of finite length for datasets[0].length but received Infinity of type number',
      ),
    );
  });

  it('mix interleaves by weight, in a plain weighted round-robin order, until one runs out', async () => {
    /** Reference: smooth weighted round-robin over integer weights, stopping at the first exhausted. */
    const reference = <T>(lists: T[][], weights: number[]) => {
      const total = weights.reduce((a, b) => a + b, 0);
      const current = weights.map(() => 0);
      const next = weights.map(() => 0);
      const out: T[] = [];
      for (;;) {
        let best = 0;
        weights.forEach((w, k) => {
          current[k]! += w;
          if (current[k]! > current[best]!) best = k;
        });
        current[best]! -= total;
        if (next[best]! >= lists[best]!.length) return out;
        out.push(lists[best]![next[best]!++]!);
      }
    };
    const a = Array.from({ length: 30 }, (_, i) => `a${i}`);
    const b = Array.from({ length: 8 }, (_, i) => `b${i}`);
    const c = Array.from({ length: 50 }, (_, i) => `c${i}`);
    for (const weights of [
      [1, 1, 1],
      [3, 1, 2],
      [5, 1, 9],
    ]) {
      const ds = MapDataset.mix([MapDataset.source(a), MapDataset.source(b), MapDataset.source(c)], weights);
      const expected = reference([a, b, c], weights);
      expect(ds.length).toBe(expected.length);
      expect(await all(ds)).toEqual(expected);
      await expectIteration(ds, expected);
    }
    // Fractional weights are the same proportions as their integer equivalents.
    const fractional = MapDataset.mix([MapDataset.source(a), MapDataset.source(c)], [0.25, 0.75]);
    expect(await all(fractional)).toEqual(reference([a, c], [1, 3]));
    // Mixing repeated datasets goes on forever, in proportion.
    const endless = MapDataset.mix(
      [MapDataset.range(3).repeat(), MapDataset.range(100, 103).repeat()],
      [2, 1],
    );
    expect(await endless.toIterDataset().take(9).toArray()).toEqual([0, 100, 1, 2, 101, 0, 1, 102, 2]);
    expect(() => MapDataset.mix([MapDataset.range(3)], [0])).toThrow(
      new RangeError('Expected a positive finite number for weights[0] but received 0 of type number'),
    );
  });

  it('shard splits contiguously, sizes differing by at most one, or equal with dropRemainder', async () => {
    const n = 23;
    for (const count of [1, 2, 4, 5, 23, 30]) {
      const parts = await Promise.all(
        Array.from({ length: count }, (_, index) => all(MapDataset.range(n).shard({ index, count }))),
      );
      expect(parts.flat()).toEqual(Array.from({ length: n }, (_, i) => i));
      const sizes = parts.map((p) => p.length);
      expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      const dropped = await Promise.all(
        Array.from({ length: count }, (_, index) =>
          all(MapDataset.range(n).shard({ index, count, dropRemainder: true })),
        ),
      );
      expect(dropped.flat()).toEqual(Array.from({ length: Math.floor(n / count) * count }, (_, i) => i));
    }
    // Each shard iterates and checkpoints like any dataset.
    await expectIteration(MapDataset.range(n).shard({ index: 2, count: 4 }), [12, 13, 14, 15, 16, 17]);
    expect(() => MapDataset.range(5).shard({ index: 3, count: 3 })).toThrow(
      new RangeError('Expected an integer in [0, 2] for options.index but received 3 of type number'),
    );
  });

  it('toIterDataset reads ahead with bounded concurrency and returns elements in order', async () => {
    const source = new SlowSource(40);
    const ds = MapDataset.source(source);
    const values = await ds.toIterDataset({ threads: 3, prefetch: 6 }).toArray();
    expect(values).toEqual(Array.from({ length: 40 }, (_, i) => i * 10));
    expect(source.maxInFlight).toBe(3);
    expect(source.calls).toBe(40);
    // Read-ahead is bounded by prefetch even when the consumer stops.
    const bounded = new SlowSource(100);
    const it = MapDataset.source(bounded).toIterDataset({ threads: 8, prefetch: 4 }).iterator();
    await it.next();
    await delay(20);
    expect(bounded.calls).toBeLessThanOrEqual(1 + 4);
    expect(bounded.calls).toBeGreaterThanOrEqual(4);
    // prefetch 0 reads on demand only.
    const lazy = new SlowSource(10);
    const onDemand = MapDataset.source(lazy).toIterDataset({ threads: 4, prefetch: 0 }).iterator();
    await onDemand.next();
    await onDemand.next();
    await delay(10);
    expect(lazy.calls).toBe(2);
    expect(lazy.maxInFlight).toBe(1);
    await expectIteration(
      MapDataset.source(new SlowSource(30)),
      Array.from({ length: 30 }, (_, i) => i * 10),
      4,
      8,
    );
  });

  it('a failing get surfaces from next() and the position stays on it', async () => {
    let failures = 1;
    const ds = MapDataset.range(6).map(async (x) => {
      if (x === 3 && failures-- > 0) throw new Error('flaky read of 3');
      return x;
    });
    const it = ds.toIterDataset({ threads: 2, prefetch: 4 }).iterator();
    const got: number[] = [];
    for (let i = 0; i < 3; i++) got.push((await it.next()).value as number);
    await expect(it.next()).rejects.toThrow('flaky read of 3');
    expect(it.getState()).toEqual({ nextIndex: 3 });
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      got.push(r.value);
    }
    expect(got).toEqual([0, 1, 2, 3, 4, 5]);
  });

  it('describes its chain and validates arguments', async () => {
    const ds = MapDataset.range(100)
      .shuffle(7)
      .map((x) => x)
      .batch(32);
    expect(String(ds)).toBe('RangeDataSource(0, 100, 1) -> Shuffle(seed=7) -> Map -> Batch(32)');
    const it = ds.toIterDataset({ threads: 2, prefetch: 4 }).prefetch(8);
    expect(String(it)).toBe(
      'RangeDataSource(0, 100, 1) -> Shuffle(seed=7) -> Map -> Batch(32) -> ToIterDataset(threads=2, prefetch=4) -> Prefetch(8)',
    );
    expect(String(it.iterator())).toBe(String(it));
    await expect(ds.get(-1)).rejects.toThrow(
      new RangeError('Expected a non-negative integer for index but received -1 of type number'),
    );
    await expect(MapDataset.range(0).get(0)).rejects.toThrow(RangeError);
    expect(() => ds.batch(0)).toThrow(
      new RangeError('Expected a positive integer for size but received 0 of type number'),
    );
    expect(() => ds.map(5 as unknown as (x: number[]) => number)).toThrow(
      new TypeError('Expected a function for fn but received 5 of type number'),
    );
    expect(() => ds.toIterDataset({ threads: 0 })).toThrow(
      new RangeError('Expected a positive integer for options.threads but received 0 of type number'),
    );
  });

  it('is immutable: operations return new datasets and leave their parent alone', async () => {
    const base = MapDataset.range(5);
    const doubled = base.map((x) => x * 2);
    base.filter(() => false);
    expect(await all(base)).toEqual([0, 1, 2, 3, 4]);
    expect(await all(doubled)).toEqual([0, 2, 4, 6, 8]);
  });
});
