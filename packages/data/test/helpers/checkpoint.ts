import { mulberry32 } from '@edl/common';
import { expect } from 'vitest';
import type { DatasetIterator, JsonObject, JsonValue } from '../../src/protocols.js';

/** Options of `assertCheckpointRoundTrip`. */
export interface CheckpointRoundTripOptions {
  /** Seed of the random restore points (default 1). */
  readonly seed?: number;
  /** Number of restores at random points into one long-lived iterator (default 2 * steps). */
  readonly randomRestores?: number;
  /** Outputs compared after each restore-at-every-step (default 12); random restores compare to the end. */
  readonly window?: number;
}

/** A small deterministic generator for choosing restore points. */
export { mulberry32 };

/** Throws unless `a` and `b` have the same keys and array lengths at every level (null matches any object). */
export function expectSameShape(a: JsonValue, b: JsonValue, path = 'state'): void {
  if (a === null || b === null) {
    if (a !== null && typeof a !== 'object')
      throw new Error(`${path}: ${JSON.stringify(a)} where null was saved`);
    if (b !== null && typeof b !== 'object')
      throw new Error(`${path}: ${JSON.stringify(b)} where null was saved`);
    return;
  }
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) {
      throw new Error(`${path}: array shape changed from ${JSON.stringify(a)} to ${JSON.stringify(b)}`);
    }
    for (let i = 0; i < a.length; i++) expectSameShape(a[i]!, b[i]!, `${path}[${i}]`);
    return;
  }
  if (typeof a !== typeof b) throw new Error(`${path}: type changed from ${typeof a} to ${typeof b}`);
  if (typeof a === 'object') {
    const bo = b as { [key: string]: JsonValue };
    const keysA = Object.keys(a).sort();
    const keysB = Object.keys(bo).sort();
    if (keysA.join() !== keysB.join()) throw new Error(`${path}: keys changed from [${keysA}] to [${keysB}]`);
    for (const key of keysA) expectSameShape(a[key]!, bo[key]!, `${path}.${key}`);
  }
}

function clone(state: JsonObject): JsonObject {
  return JSON.parse(JSON.stringify(state)) as JsonObject;
}

/**
 * Grain's `assert_equal_output_after_checkpoint` for our iterators. It reads `steps` results from a
 * fresh iterator, saving the state before each (after letting background read-ahead run), then
 * checks that:
 * - every state is plain JSON (survives JSON.stringify/parse unchanged) of one fixed shape;
 * - a fresh iterator restored to the state saved before step k (for EVERY k, and the final state)
 *   reports that state back and produces exactly the results k, k+1, ...;
 * - one long-lived iterator, restored again and again to states of random steps (backwards and
 *   forwards, with whatever it has read ahead at that moment), produces the results from there on.
 * Returns the values of the reference pass (until done) for comparison with a plain reference.
 */
export async function assertCheckpointRoundTrip<T>(
  makeIterator: () => DatasetIterator<T>,
  steps: number,
  options: CheckpointRoundTripOptions = {},
): Promise<T[]> {
  const random = mulberry32(options.seed ?? 1);
  const window = options.window ?? 12;
  const reference = makeIterator();
  const states: JsonObject[] = [];
  const results: IteratorResult<T>[] = [];
  for (let k = 0; k < steps; k++) {
    // Let background read-ahead progress first: the state must not depend on it.
    await delay(3);
    const state = reference.getState();
    states.push(clone(state));
    expect(state, `state before step ${k} is plain JSON`).toEqual(states[k]);
    results.push(await reference.next());
  }
  states.push(clone(reference.getState()));
  for (const state of states) expectSameShape(states[0]!, state);

  for (let k = 0; k <= steps; k++) {
    const restored = makeIterator();
    restored.setState(clone(states[k]!));
    expect(restored.getState(), `getState() right after restoring step ${k}`).toEqual(states[k]);
    for (let j = k; j < Math.min(steps, k + window); j++) {
      expect(await restored.next(), `result ${j} after restoring the state of step ${k}`).toEqual(results[j]);
    }
  }

  const restores = options.randomRestores ?? 2 * steps;
  const live = makeIterator();
  let position = 0;
  for (let r = 0; r < restores; r++) {
    // Advance a random number of steps, then jump to a random saved state.
    const advance = Math.floor(random() * 4);
    for (let i = 0; i < advance && position < steps; i++, position++) {
      expect(await live.next(), `result ${position} of the live iterator`).toEqual(results[position]);
    }
    position = Math.floor(random() * (steps + 1));
    live.setState(clone(states[position]!));
  }
  for (; position < steps; position++) {
    expect(await live.next(), `result ${position} after the last random restore`).toEqual(results[position]);
  }

  const values: T[] = [];
  for (const result of results) {
    if (result.done) break;
    values.push(result.value);
  }
  return values;
}

/** Reads an iterator to its end. */
export async function drain<T>(iterator: DatasetIterator<T>, limit = 1_000_000): Promise<T[]> {
  const values: T[] = [];
  for (let i = 0; i < limit; i++) {
    const result = await iterator.next();
    if (result.done) return values;
    values.push(result.value);
  }
  throw new Error(`iterator did not end within ${limit} elements`);
}

/** Resolves after a few macrotask turns, so reads of an async source finish out of order. */
export function delay(turns: number): Promise<void> {
  return new Promise((resolve) => {
    const step = (left: number) => (left <= 0 ? resolve() : setImmediate(() => step(left - 1)));
    step(turns);
  });
}
