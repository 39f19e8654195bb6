import { describe, expect, it } from 'vitest';
import { DatasetIteratorBase } from '../../src/dataset/dataset-iterator-base.js';
import { DatasetError } from '../../src/dataset/errors.js';
import { IterDataset } from '../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import type { JsonObject } from '../../src/protocols.js';
import { assertCheckpointRoundTrip, delay, drain } from '../helpers/checkpoint.js';

/** A sequential source with its own seekable state: what a user (or the worker's task feed) writes. */
class CountingIterator extends DatasetIteratorBase<number> {
  #next = 0;
  constructor(readonly end: number) {
    super();
  }
  protected async advance(): Promise<IteratorResult<number>> {
    await delay(this.#next % 3);
    if (this.#next >= this.end) return { done: true, value: undefined };
    return { done: false, value: this.#next++ };
  }
  getState(): JsonObject {
    return { next: this.#next };
  }
  protected restore(state: JsonObject): void {
    this.#next = state.next as number;
  }
  toString(): string {
    return `Counting(${this.end})`;
  }
}

const counting = (end: number) =>
  IterDataset.fromIterator(() => new CountingIterator(end), `Counting(${end})`);
const range = (n: number) => Array.from({ length: n }, (_, i) => i);

describe('IterDataset', () => {
  it('fromIterable replays a generator factory exactly', async () => {
    async function* gen() {
      for (let i = 0; i < 15; i++) {
        await delay(i % 2);
        yield `r${i}`;
      }
    }
    const ds = IterDataset.fromIterable(gen, 'Records');
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 18);
    expect(values).toEqual(range(15).map((i) => `r${i}`));
    expect(await IterDataset.fromIterable(() => [1, 2, 3]).toArray()).toEqual([1, 2, 3]);
    expect(String(ds.map((x) => x))).toBe('Records -> Map');
  });

  it('fromIterator uses the iterator own state', async () => {
    const values = await assertCheckpointRoundTrip(() => counting(12).iterator(), 14);
    expect(values).toEqual(range(12));
  });

  it('map', async () => {
    const ds = counting(20).map(async (x) => ({ x, y: x * 2 }));
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 22);
    expect(values).toEqual(range(20).map((x) => ({ x, y: x * 2 })));
  });

  it('filter', async () => {
    const ds = counting(30).filter((x) => x % 4 === 1);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 10);
    expect(values).toEqual(range(30).filter((x) => x % 4 === 1));
  });

  it('batch, with and without the remainder', async () => {
    for (const dropRemainder of [false, true]) {
      const ds = counting(23).batch(5, { dropRemainder });
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), 7);
      const expected: number[][] = [];
      for (let i = 0; i < 23; i += 5) expected.push(range(23).slice(i, i + 5));
      expect(values).toEqual(dropRemainder ? expected.slice(0, 4) : expected);
    }
  });

  it('take', async () => {
    const ds = counting(20).take(7);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), 9)).toEqual(range(7));
    expect(await counting(3).take(10).toArray()).toEqual([0, 1, 2]);
    expect(await counting(3).take(0).toArray()).toEqual([]);
  });

  it('mix draws in weighted round-robin order and stops at the first exhausted dataset', async () => {
    const a = MapDataset.source(range(20).map((i) => `a${i}`)).toIterDataset();
    const b = IterDataset.fromIterable(() => range(6).map((i) => `b${i}`));
    const ds = IterDataset.mix([a, b], [3, 1]);
    // Reference: smooth weighted round-robin over [3, 1] is a a b a | a a b a | ...
    const expected: string[] = [];
    let ai = 0;
    let bi = 0;
    for (;;) {
      const pattern = ['a', 'a', 'b', 'a'];
      let stop = false;
      for (const p of pattern) {
        if (p === 'a') {
          if (ai >= 20) stop = true;
          else expected.push(`a${ai++}`);
        } else if (bi >= 6) stop = true;
        else expected.push(`b${bi++}`);
        if (stop) break;
      }
      if (stop) break;
    }
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), expected.length + 2);
    expect(values).toEqual(expected);
    expect(values.slice(0, 8)).toEqual(['a0', 'a1', 'b0', 'a2', 'a3', 'a4', 'b1', 'a5']);
  });

  it('interleave reads cycleLength datasets in turn, refilling a slot when its dataset ends', async () => {
    // Parent: file ids; each file has a different number of records.
    const sizes = [3, 0, 5, 1, 4, 2, 6];
    const files = IterDataset.fromIterable(() => sizes.map((_, f) => f));
    const records = (f: number) =>
      IterDataset.fromIterable(async function* () {
        for (let r = 0; r < sizes[f]!; r++) {
          await delay(r % 2);
          yield `f${f}r${r}`;
        }
      });
    /** Plain reference with the same semantics, on arrays. */
    const reference = (cycle: number) => {
      const lists = sizes.map((n, f) => range(n).map((r) => `f${f}r${r}`));
      const slots: Array<string[] | null> = new Array(cycle).fill(null);
      let nextFile = 0;
      let cursor = 0;
      const out: string[] = [];
      for (;;) {
        if (slots[cursor] === null && nextFile < lists.length) slots[cursor] = [...lists[nextFile++]!];
        const slot = slots[cursor];
        if (slot === null || slot === undefined) {
          if (nextFile >= lists.length && slots.every((s) => s === null)) return out;
          cursor = (cursor + 1) % cycle;
          continue;
        }
        if (slot.length === 0) {
          slots[cursor] = null;
          continue;
        }
        out.push(slot.shift()!);
        cursor = (cursor + 1) % cycle;
      }
    };
    for (const cycle of [1, 2, 3, 10]) {
      const ds = files.interleave(records, cycle);
      const expected = reference(cycle);
      expect(expected.length).toBe(21);
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), expected.length + 2, {
        seed: cycle,
      });
      expect(values).toEqual(expected);
    }
  });

  it('interleave state is plain JSON with one entry per slot', async () => {
    const ds = IterDataset.fromIterable(() => [5, 6]).interleave(
      (n) => MapDataset.range(n).toIterDataset(),
      3,
    );
    const it = ds.iterator();
    await it.next();
    await it.next();
    expect(it.getState()).toEqual({
      parent: { consumed: 2 },
      cursor: 2,
      slots: [
        { parentState: { consumed: 0 }, state: { nextIndex: 1 } },
        { parentState: { consumed: 1 }, state: { nextIndex: 1 } },
        null,
      ],
    });
  });

  it('errors: exact messages, busy iterators and bad states', async () => {
    const ds = counting(5);
    expect(() => ds.batch(1.5)).toThrow(
      new RangeError('Expected a positive integer for size but received 1.5 of type number'),
    );
    expect(() => ds.prefetch(0)).toThrow(
      new RangeError('Expected a positive integer for bufferSize but received 0 of type number'),
    );
    expect(() => ds.interleave((x) => counting(x), 0)).toThrow(RangeError);
    expect(() => IterDataset.mix([], [])).toThrow(
      new TypeError('Expected a non-empty array for datasets but received an array of length 0'),
    );
    expect(() => IterDataset.mix([ds, ds], [1])).toThrow(
      new TypeError('Expected an array of 2 weights for weights but received an array of length 1'),
    );
    const it = ds.map((x) => x).iterator();
    const pending = it.next();
    expect(() => it.setState({ parent: { next: 0 } })).toThrow(DatasetError);
    await pending;
    const taken = ds.take(3).iterator();
    expect(() => taken.setState({ parent: { next: 0 } })).toThrow(
      new DatasetError(
        'ERR_BAD_STATE',
        "Expected a non-negative integer for Take state key 'taken' but received undefined",
      ),
    );
    try {
      taken.setState({ parent: { next: 0 }, taken: -1 });
    } catch (error) {
      expect((error as DatasetError).code).toBe('ERR_BAD_STATE');
    }
  });

  it('serializes concurrent next() calls', async () => {
    const it = counting(10)
      .map(async (x) => {
        await delay((10 - x) % 4);
        return x;
      })
      .iterator();
    const results = await Promise.all(range(12).map(() => it.next()));
    expect(results.map((r) => (r.done ? 'done' : r.value))).toEqual([...range(10), 'done', 'done']);
  });

  it('a pipeline of every operation resumes exactly', async () => {
    const ds = MapDataset.range(200)
      .shuffle(11)
      .repeat(2)
      .toIterDataset({ threads: 4, prefetch: 8 })
      .filter((x) => x % 5 !== 0)
      .map((x) => x + 1)
      .batch(7)
      .prefetch(3)
      .take(40);
    const values = await assertCheckpointRoundTrip(() => ds.iterator(), 45, { window: 6 });
    expect(values.length).toBe(40);
    const flat = values.flat();
    expect(flat.length).toBe(40 * 7);
    expect(await drain(ds.iterator())).toEqual(values);
  });
});
