import { describe, expect, it } from 'vitest';
import { DatasetError } from '../../src/dataset/errors.js';
import { IterDataset } from '../../src/dataset/iter-dataset.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import { assertCheckpointRoundTrip, delay, drain } from '../helpers/checkpoint.js';
import { counting, range } from '../helpers/datasets.js';

// What every IterDataset shares (errors, serialized next(), a pipeline of every operation); each
// transform has its own file in transforms/.
describe('IterDataset', () => {
  it('errors: exact messages, busy iterators and bad states', async () => {
    const ds = counting(5);
    expect(() => ds.batch(1.5)).toThrow(
      new RangeError('Expected a positive integer for size but received 1.5'),
    );
    expect(() => ds.prefetch(0)).toThrow(
      new RangeError('Expected a positive integer for bufferSize but received 0'),
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
