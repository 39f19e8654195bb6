import { describe, expect, it } from 'vitest';
import { epochSeed, indexShuffle } from '../../../src/dataset/index-shuffle.js';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import {
  all,
  CountingIterator,
  counting,
  expectIteration,
  type ReadLog,
  range,
} from '../../helpers/datasets.js';

// shuffle: src/dataset/transforms/shuffle.ts. Every case checks checkpoint and restore at each step.
describe('shuffle', () => {
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
});

// IterDataset.shuffle: WindowShuffleIterator in the same file.
describe('window shuffle', () => {
  const sorted = (values: number[]) => [...values].sort((a, b) => a - b);

  it('permutes each window of bufferSize elements, deterministically for a seed', async () => {
    const values = await counting(23).shuffle({ bufferSize: 5, seed: 3 }).toArray();
    for (let w = 0; w < 5; w++) {
      expect(sorted(values.slice(w * 5, w * 5 + 5)), `window ${w}`).toEqual(
        range(23).slice(w * 5, w * 5 + 5),
      );
    }
    expect(values).not.toEqual(range(23));
    expect(await counting(23).shuffle({ bufferSize: 5, seed: 3 }).toArray()).toEqual(values);
    expect(await counting(23).shuffle({ bufferSize: 5, seed: 4 }).toArray()).not.toEqual(values);
    // One window over everything is a plain full shuffle.
    expect(sorted(await counting(40).shuffle({ bufferSize: 100, seed: 1 }).toArray())).toEqual(range(40));
    expect(await counting(0).shuffle({ bufferSize: 4, seed: 1 }).toArray()).toEqual([]);
    expect(String(counting(3).shuffle({ bufferSize: 4, seed: 9 }))).toBe(
      'Counting(3) -> WindowShuffle(bufferSize=4, seed=9)',
    );
  });

  it('checkpoints and restores at every step, window boundaries and the partial last window included', async () => {
    for (const [n, bufferSize] of [
      [23, 5],
      [10, 5],
      [7, 1],
    ] as const) {
      const ds = counting(n).shuffle({ bufferSize, seed: 11 });
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), n + 2);
      expect(values).toEqual(await ds.toArray());
    }
  });

  it('keeps its own state small whatever the buffer size and re-reads at most one window on restore', async () => {
    const log: ReadLog = { reads: 0 };
    const bufferSize = 20_000;
    const source = IterDataset.fromIterator(() => new CountingIterator(50_000, { log }), 'Counting');
    const ds = source.shuffle({ bufferSize, seed: 5 });
    const it = ds.iterator();
    const first: number[] = [];
    for (let i = 0; i < 40_100; i++) first.push((await it.next()).value as number);
    const state = it.getState();
    const { parent, ...own } = state;
    expect(JSON.stringify(own).length).toBeLessThanOrEqual(1024);
    expect(own).toEqual({ window: 2, position: 100 });
    expect(parent).toEqual({ next: 40_000 });
    const expectedRest: number[] = [];
    for (let i = 0; i < 100; i++) expectedRest.push((await it.next()).value as number);

    log.reads = 0;
    const restored = ds.iterator();
    restored.setState(state);
    for (let i = 0; i < 100; i++) expect((await restored.next()).value).toBe(expectedRest[i]);
    // The replay re-reads the current window (the last one, 10,000 elements long): at most bufferSize.
    expect(log.reads).toBe(10_000);
  }, 60_000);

  it('checks its arguments and state', () => {
    expect(() => counting(3).shuffle({ bufferSize: 0, seed: 1 })).toThrow(
      /Expected a positive integer for options.bufferSize but received 0/,
    );
    expect(() => counting(3).shuffle({ bufferSize: 2, seed: 1.5 })).toThrow(
      /Expected a safe integer for options.seed/,
    );
    expect(() => counting(3).shuffle({ bufferSize: 2, seed: 1, size: 3 } as never)).toThrow(TypeError);
    const it = counting(3).shuffle({ bufferSize: 2, seed: 1 }).iterator();
    expect(() => it.setState({ parent: { next: 0 }, window: 0, position: 3 })).toThrow(/position <= 2/);
    expect(() => it.setState({ parent: { next: 0 }, window: -1, position: 0 })).toThrow(/'window'/);
  });
});
