import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { all, expectIteration, range } from '../../helpers/datasets.js';

// mix: src/dataset/transforms/mix.ts. Every case checks checkpoint and restore at each step.
describe('mix', () => {
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
      new RangeError('Expected a positive finite number for weights[0] but received 0'),
    );
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
});
