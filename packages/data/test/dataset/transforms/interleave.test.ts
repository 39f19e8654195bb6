import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip, delay } from '../../helpers/checkpoint.js';
import { range } from '../../helpers/datasets.js';

// interleave: src/dataset/transforms/interleave.ts. Every case checks checkpoint and restore at each step.
describe('interleave', () => {
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
});
