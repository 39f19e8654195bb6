import { describe, expect, it } from 'vitest';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { counting } from '../../helpers/datasets.js';

// flatMap: src/dataset/transforms/flat-map.ts. Every case checks checkpoint and restore at each step.
describe('flatMap', () => {
  it('replaces each element by its outputs, empty outputs included', async () => {
    // 0 -> [], 1 -> [10], 2 -> [20, 21], 3 -> [30, 31, 32], ...
    const split = (x: number) => Array.from({ length: x % 4 }, (_, k) => x * 10 + k);
    const expected = Array.from({ length: 9 }, (_, x) => split(x)).flat();
    const ds = counting(9).flatMap(split);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), expected.length + 2)).toEqual(expected);
    // Async functions and any iterable (a generator here) work too.
    const asyncDs = counting(3).flatMap(async (x) => new Set([x, x + 100]));
    expect(await asyncDs.toArray()).toEqual([0, 100, 1, 101, 2, 102]);
    function* twice(x: number) {
      yield x;
      yield x;
    }
    expect(await counting(2).flatMap(twice).toArray()).toEqual([0, 0, 1, 1]);
    expect(String(ds)).toBe('Counting(9) -> FlatMap');
  });

  it('re-reads only the element being split on restore', async () => {
    let calls = 0;
    const ds = counting(5).flatMap((x) => {
      calls++;
      return [x, x, x];
    });
    const it = ds.iterator();
    for (let i = 0; i < 7; i++) await it.next();
    const state = it.getState();
    expect(state).toEqual({ parent: { next: 2 }, offset: 1 });
    calls = 0;
    const restored = ds.iterator();
    restored.setState(state);
    expect((await restored.next()).value).toBe(2);
    expect(calls).toBe(1);
    expect(() => counting(2).flatMap(3 as never)).toThrow(/Expected a function for fn/);
  });
});
