import { describe, expect, it } from 'vitest';
import { ElasticIterator } from '../../src/dataset/elastic-iterator.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import type { JsonObject } from '../../src/protocols.js';
import { assertCheckpointRoundTrip } from '../helpers/checkpoint.js';

const N = 97;
const EPOCHS = 3;
/** Elements tagged with their epoch, shuffled anew each epoch. */
const dataset = MapDataset.range(N).shuffle(5).repeat(EPOCHS);
const tagged = MapDataset.range(N * EPOCHS).map((i) => i); // global positions, for epoch bookkeeping

/** Runs `count` consumers in lockstep for `steps` global steps (or to the end); returns what each saw. */
async function runConsumers(
  count: number,
  state: JsonObject | undefined,
  steps: number,
  globalBatchSize: number,
): Promise<{ seen: number[]; positions: number[]; states: JsonObject[]; ended: boolean }> {
  const iterators = Array.from(
    { length: count },
    (_, index) => new ElasticIterator(dataset, { globalBatchSize, shard: { index, count } }),
  );
  const positionIterators = Array.from(
    { length: count },
    (_, index) => new ElasticIterator(tagged, { globalBatchSize, shard: { index, count } }),
  );
  if (state) for (const it of [...iterators, ...positionIterators]) it.setState(state);
  const seen: number[] = [];
  const positions: number[] = [];
  let ended = false;
  for (let step = 0; step < steps && !ended; step++) {
    for (let c = 0; c < count; c++) {
      const r = await iterators[c]!.next();
      const p = await positionIterators[c]!.next();
      if (r.done) {
        ended = true;
        expect(p.done).toBe(true);
        continue;
      }
      seen.push(...r.value);
      positions.push(...(p.value as number[]));
    }
  }
  return { seen, positions, states: iterators.map((it) => it.getState()), ended };
}

describe('ElasticIterator', () => {
  it('N consumers in lockstep see every element exactly once per epoch', async () => {
    const { seen, positions, ended } = await runConsumers(4, undefined, 1000, 12);
    expect(ended).toBe(true);
    for (let e = 0; e < EPOCHS; e++) {
      const epoch = seen.filter((_, k) => Math.floor(positions[k]! / N) === e);
      expect([...epoch].sort((a, b) => a - b)).toEqual(Array.from({ length: N }, (_, i) => i));
    }
  });

  it('a state saved with N consumers restores on M consumers without loss or repeat (N -> M)', async () => {
    for (const [n, m] of [
      [4, 2],
      [2, 6],
      [3, 4],
      [6, 1],
      [1, 3],
    ] as const) {
      const globalBatchSize = 12;
      const before = await runConsumers(n, undefined, 11, globalBatchSize);
      // Every consumer holds the same state: the global position.
      for (const s of before.states) expect(s).toEqual(before.states[0]);
      expect(before.states[0]).toEqual({ globalNextIndex: 11 * globalBatchSize });
      const after = await runConsumers(m, before.states[0], 1000, globalBatchSize);
      expect(after.ended).toBe(true);
      const seen = [...before.seen, ...after.seen];
      const positions = [...before.positions, ...after.positions];
      expect([...positions].sort((a, b) => a - b)).toEqual(Array.from({ length: N * EPOCHS }, (_, i) => i));
      for (let e = 0; e < EPOCHS; e++) {
        const epoch = seen.filter((_, k) => Math.floor(positions[k]! / N) === e);
        expect(
          [...epoch].sort((a, b) => a - b),
          `epoch ${e} after ${n} -> ${m}`,
        ).toEqual(Array.from({ length: N }, (_, i) => i));
      }
    }
  });

  it('one consumer takes every count-th element of each global batch, and round-trips its state', async () => {
    const ds = MapDataset.range(30);
    const make = () => new ElasticIterator(ds, { globalBatchSize: 8, shard: { index: 1, count: 4 } });
    const values = await assertCheckpointRoundTrip(make, 6);
    expect(values).toEqual([
      [1, 5],
      [9, 13],
      [17, 21],
      [25, 29],
    ]);
    const dropped = new ElasticIterator(ds, { globalBatchSize: 8, dropRemainder: true });
    const batches: number[][] = [];
    for (let r = await dropped.next(); !r.done; r = await dropped.next()) batches.push(r.value);
    expect(batches.flat()).toEqual(Array.from({ length: 24 }, (_, i) => i));
  });

  it('validates its options', () => {
    expect(
      () => new ElasticIterator(MapDataset.range(4), { globalBatchSize: 10, shard: { index: 0, count: 4 } }),
    ).toThrow(
      new RangeError('Expected a multiple of the shard count 4 for options.globalBatchSize but received 10'),
    );
    expect(() => new ElasticIterator(MapDataset.range(4), { globalBatchSize: 0 })).toThrow(RangeError);
  });
});
