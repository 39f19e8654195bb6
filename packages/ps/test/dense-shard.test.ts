import type { NamedTensor } from '@edl/proto';
import { describe, expect, it } from 'vitest';
import { ParameterStore } from '../src/parameter-store.js';
import { decodeDensePart, encodeDensePart } from '../src/service/dense-part-codec.js';
import { DenseShard } from '../src/service/dense-shard.js';
import { placeDenseVariables } from '../src/sparse/placement.js';

const t = (name: string, values: number[]): NamedTensor => ({
  name,
  shape: [values.length],
  values: new Float32Array(values),
});
const ADAM = { type: 'adam', learningRate: 0.1 } as const;

describe('DenseShard', () => {
  it('sync: averages the K gradients of an update, as the master store does, whatever their order', () => {
    const store = new ParameterStore({ mode: 'sync', gradsToWait: 2, optimizer: ADAM });
    store.initialize([t('a', [1, 2]), t('b', [3])]);
    const shard = new DenseShard(ADAM);
    shard.declare([t('a', [1, 2]), t('b', [3])]);
    const steps = [
      [t('a', [0.5, -1]), t('b', [2])],
      [t('a', [1.5, 0]), t('b', [-1])],
      [t('a', [-0.5, 0.25]), t('b', [0.75])],
      [t('a', [0.1, 0.2]), t('b', [0.3])],
    ];
    for (const g of steps) store.applyGradient(g);
    // Update 2's gradients arrive before update 1's second one: each update keeps its own.
    const update = (version: number) => ({ version, gradients: 2, lrDivisor: 1 });
    expect(shard.push(steps[0] as NamedTensor[], update(1))).toBe(0);
    expect(shard.push(steps[2] as NamedTensor[], update(2))).toBe(0);
    expect(shard.push(steps[1] as NamedTensor[], update(1))).toBe(1);
    expect(shard.push(steps[3] as NamedTensor[], update(2))).toBe(2);
    expect(shard.snapshot().variables).toEqual(store.snapshot().variables);
    expect(shard.optimizer.step).toBe(store.optimizer.step);
  });

  it('async: applies each gradient at once, dividing the learning rate as the master names it', () => {
    const store = new ParameterStore({
      mode: 'async',
      stalenessModulation: true,
      optimizer: { type: 'sgd', learningRate: 1 },
    });
    store.initialize([t('a', [0])]);
    const shard = new DenseShard({ type: 'sgd', learningRate: 1 });
    shard.declare([t('a', [0])]);
    store.applyGradient([t('a', [1])]);
    store.applyGradient([t('a', [1])]);
    store.applyGradient([t('a', [3])], 0); // staleness 2: half the rate
    shard.push([t('a', [1])], { version: 1, gradients: 1, lrDivisor: 1 });
    shard.push([t('a', [3])], { version: 3, gradients: 1, lrDivisor: 2 });
    shard.push([t('a', [1])], { version: 2, gradients: 1, lrDivisor: 1 });
    expect(shard.snapshot().variables).toEqual(store.snapshot().variables);
    expect(shard.version).toBe(3);
  });

  it('keeps the first declaration, and refuses a gradient of a variable it does not hold before any change', () => {
    const shard = new DenseShard({ type: 'sgd' });
    expect(() => shard.push([], { version: 1, gradients: 1, lrDivisor: 1 })).toThrow(
      /holds no dense variables/,
    );
    expect(shard.declare([t('a', [1])])).toBe(true);
    expect(shard.declare([t('a', [9])])).toBe(false);
    expect(() => shard.push([t('a', [1]), t('z', [1])], { version: 1, gradients: 1, lrDivisor: 1 })).toThrow(
      "received 'z' (not held here)",
    );
    expect(() => shard.push([t('a', [1, 2])], { version: 1, gradients: 1, lrDivisor: 1 })).toThrow(
      "Expected 1 values for the gradient of 'a' but received 2",
    );
    expect(shard.snapshot().variables).toEqual([t('a', [1])]);
    expect(shard.version).toBe(0);
  });

  it('pull waits for the version asked for, and answers what it holds after the wait', async () => {
    const shard = new DenseShard({ type: 'sgd', learningRate: 1 });
    shard.declare([t('a', [0])]);
    const waiting = shard.pull(1, 10_000);
    shard.push([t('a', [1])], { version: 1, gradients: 1, lrDivisor: 1 });
    expect(await waiting).toEqual({ version: 1, variables: [t('a', [-1])] });
    const begin = performance.now();
    expect((await shard.pull(5, 50)).version).toBe(1);
    expect(performance.now() - begin).toBeGreaterThanOrEqual(40);
  });

  it('restores its share of every shard part, placed again by size, with the optimizer slots', () => {
    const parts = [0, 1].map((i) => {
      const shard = new DenseShard(ADAM);
      shard.declare(i === 0 ? [t('big', [1, 2, 3, 4]), t('c', [5])] : [t('mid', [6, 7]), t('d', [8])]);
      shard.push(i === 0 ? [t('big', [1, 1, 1, 1]), t('c', [1])] : [t('mid', [1, 1]), t('d', [1])], {
        version: 1,
        gradients: 1,
        lrDivisor: 1,
      });
      return decodeDensePart(Buffer.concat(encodeDensePart(shard.snapshot(), ADAM)), `part-${i}`);
    });
    const sizes = new Map([
      ['big', 4],
      ['mid', 2],
      ['c', 1],
      ['d', 1],
    ]);
    const placement = placeDenseVariables(sizes, 3);
    for (let index = 0; index < 3; index++) {
      const shard = new DenseShard(ADAM);
      shard.restore(parts, index, 3, 42);
      const mine = [...placement.shardOf]
        .filter(([, s]) => s === index)
        .map(([n]) => n)
        .sort();
      const snapshot = shard.snapshot();
      expect(snapshot.variables.map((v) => v.name).sort()).toEqual(mine);
      expect([...snapshot.slots.keys()].sort()).toEqual(mine);
      expect(snapshot.version).toBe(42);
      expect(snapshot.optimizerStep).toBe(1);
    }
    expect(() => decodeDensePart(new Uint8Array(8), 'short')).toThrow('Dense part short is corrupt');
  });
});
