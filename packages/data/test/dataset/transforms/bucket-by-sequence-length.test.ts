import { describe, expect, it } from 'vitest';
import { IterDataset } from '../../../src/dataset/iter-dataset.js';
import { assertCheckpointRoundTrip } from '../../helpers/checkpoint.js';
import { CountingIterator, type ReadLog } from '../../helpers/datasets.js';

// bucketBySequenceLength: src/dataset/transforms/bucket-by-sequence-length.ts. Every case checks
// checkpoint and restore at each step.
describe('bucketBySequenceLength', () => {
  /** Element x is [x, ...] of length lengths[x % lengths.length]. */
  const lengths = [1, 5, 2, 9, 3, 4, 7, 1, 6, 2];
  const sequences = (n: number, log?: ReadLog) =>
    IterDataset.fromIterator(() => new CountingIterator(n, { log }), `Counting(${n})`).map((x) =>
      new Array<number>(lengths[x % lengths.length]!).fill(x),
    );

  /** A plain reference: buckets filled in order, full ones emitted at once, the rest at the end. */
  function reference(
    n: number,
    boundaries: number[],
    batchSizes: number[],
    toBoundary = false,
    drop = false,
  ) {
    const buckets: number[][][] = batchSizes.map(() => []);
    const out: number[][][] = [];
    const emit = (b: number) => {
      const rows = buckets[b]!;
      buckets[b] = [];
      const target = toBoundary ? boundaries[b]! - 1 : Math.max(...rows.map((r) => r.length));
      out.push(rows.map((r) => [...r, ...new Array<number>(target - r.length).fill(0)]));
    };
    for (let x = 0; x < n; x++) {
      const row = new Array<number>(lengths[x % lengths.length]!).fill(x);
      let b = boundaries.findIndex((boundary) => row.length < boundary);
      if (b < 0) b = boundaries.length;
      buckets[b]!.push(row);
      if (buckets[b]!.length === batchSizes[b]) emit(b);
    }
    if (!drop) {
      buckets.forEach((bucket, b) => {
        if (bucket.length > 0) emit(b);
      });
    }
    return out;
  }

  it('batches sequences by length bucket, padded to the longest or to the boundary', async () => {
    const ds = sequences(23).bucketBySequenceLength([3, 6], [3, 2, 2]);
    const expected = reference(23, [3, 6], [3, 2, 2]);
    expect(await assertCheckpointRoundTrip(() => ds.iterator(), expected.length + 2)).toEqual(expected);
    const toBoundary = sequences(20).bucketBySequenceLength([3, 6, 10], [4, 2, 3, 1], {
      padToBucketBoundary: true,
      dropRemainder: true,
    });
    const expectedToBoundary = reference(20, [3, 6, 10], [4, 2, 3, 1], true, true);
    expect(
      await assertCheckpointRoundTrip(() => toBoundary.iterator(), expectedToBoundary.length + 1),
    ).toEqual(expectedToBoundary);
    expect(String(ds)).toBe('Counting(23) -> Map -> BucketBySequenceLength([3, 6], [3, 2, 2])');
  });

  it('saves no element: a restore re-reads from the oldest buffered element', async () => {
    const log: ReadLog = { reads: 0 };
    const ds = sequences(40, log).bucketBySequenceLength([3, 6], [3, 2, 2]);
    const it = ds.iterator();
    for (let i = 0; i < 4; i++) await it.next();
    const state = it.getState();
    const rest = [];
    for (let r = await it.next(); !r.done; r = await it.next()) rest.push(r.value);
    log.reads = 0;
    const restored = ds.iterator();
    restored.setState(state);
    expect(restored.getState()).toEqual(state);
    const restoredRest = [];
    for (let r = await restored.next(); !r.done; r = await restored.next()) restoredRest.push(r.value);
    expect(restoredRest).toEqual(rest);
    // Reads: the replay starts at the oldest buffered element and goes on to the end of the 40.
    const start = (state.parent as { parent: { next: number } }).parent.next;
    expect(state.read).toBeGreaterThan(0);
    expect(start + (state.read as number)).toBeLessThanOrEqual(40);
    expect(log.reads).toBe(40 - start);
  });

  it('checks its arguments and elements', async () => {
    expect(() => sequences(3).bucketBySequenceLength([3, 3], [1, 1, 1])).toThrow(
      /Expected an integer >= 4 for boundaries\[1\] but received 3/,
    );
    expect(() => sequences(3).bucketBySequenceLength([3], [1])).toThrow(/Expected an array of 2 batch sizes/);
    expect(() => sequences(3).bucketBySequenceLength([3], [1, 0])).toThrow(/batchSizes\[1\]/);
    await expect(
      sequences(5).bucketBySequenceLength([3, 6], [1, 1, 1], { padToBucketBoundary: true }).toArray(),
    ).rejects.toThrow(/an element of length 9 is not below the last boundary 6/);
  });
});
