import { expect } from 'vitest';

/** What `onGradientApplied` receives, as far as the helpers below read it. */
interface AppliedGradient {
  readonly gradients: ReadonlyArray<{ readonly values: ArrayLike<number> }>;
}

/**
 * The record ids every applied gradient carried, per epoch, for the identity models of the
 * exactly-once tests: their first gradient holds at index `id` how many times record `id` was in
 * the minibatch (its sign aside). Pass `onGradientApplied` to `startMaster`.
 *
 * @param epochNow - the epoch the master is in (read when each gradient is applied).
 */
export function appliedIdsPerEpoch(epochNow: () => number) {
  const applied = new Map<number, number[]>();
  return {
    applied,
    onGradientApplied(gradient: AppliedGradient): void {
      const epoch = epochNow();
      const ids = applied.get(epoch) ?? [];
      applied.set(epoch, ids);
      const values = gradient.gradients[0]?.values ?? [];
      for (let id = 0; id < values.length; id++) {
        for (let n = Math.abs(Math.round(values[id] ?? 0)); n > 0; n--) ids.push(id);
      }
    },
  };
}

/** Asserts that each of `epochs` epochs applied the ids `0..records-1` exactly once each (repeats kept). */
export function expectEachIdOncePerEpoch(
  applied: ReadonlyMap<number, number[]>,
  records: number,
  epochs: number,
): void {
  const everyId = Array.from({ length: records }, (_, id) => id);
  expect([...applied.keys()].sort()).toEqual(Array.from({ length: epochs }, (_, epoch) => epoch));
  for (const ids of applied.values()) expect([...ids].sort((a, b) => a - b)).toEqual(everyId);
}
