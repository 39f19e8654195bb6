import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { attribute } from '../../src/dataset/attribution.js';
import { DatasetIteratorBase, DONE } from '../../src/dataset/dataset-iterator-base.js';
import { IterDataset } from '../../src/dataset/iter-dataset.js';
import type { JsonObject } from '../../src/protocols.js';

/**
 * An attributed source as a worker's records are: record `{ unit, index }` of units of the given
 * sizes, one after the other, with the unit of the record returned last.
 */
class UnitsIterator extends DatasetIteratorBase<{ unit: number; index: number }> {
  readonly #records: { unit: number; index: number }[];
  #next = 0;
  constructor(sizes: readonly number[]) {
    super();
    this.#records = sizes.flatMap((size, unit) =>
      Array.from({ length: size }, (_, index) => ({ unit, index })),
    );
  }
  lastUnit(): number {
    return this.#next === 0 ? -1 : (this.#records[this.#next - 1]?.unit ?? -1);
  }
  protected async advance(): Promise<IteratorResult<{ unit: number; index: number }>> {
    const record = this.#records[this.#next];
    if (record === undefined) return DONE;
    this.#next++;
    return { done: false, value: record };
  }
  getState(): JsonObject {
    return { next: this.#next };
  }
  protected restore(state: JsonObject): void {
    this.#next = state.next as number;
  }
  toString(): string {
    return 'Units';
  }
}

function units(sizes: readonly number[], ordered = false) {
  return IterDataset.fromIterator(() => {
    const iterator = new UnitsIterator(sizes);
    return attribute(iterator, {
      source: 'TaskFeed(training)',
      lastUnit: () => iterator.lastUnit(),
      inStep: true,
      elements: 'records',
      ordered,
    });
  }, 'Units');
}

type Rec = { unit: number; index: number };
const SIZES = [7, 3, 12, 1, 9];

describe("records attributed to their units (a worker's tasks)", () => {
  it('lets order-keeping transforms through unchanged: map, batch, prefetch, unbatch, rebatch, cache', async () => {
    const plain = await units(SIZES).toArray();
    expect(plain).toHaveLength(32);
    const chained = await units(SIZES)
      .map((r) => ({ ...r }))
      .cache()
      .prefetch(3)
      .batch(5)
      .rebatch(4)
      .unbatch()
      .toArray();
    expect(chained).toEqual(plain);
  });

  it.each<[string, (d: IterDataset<Rec>) => IterDataset<unknown>, RegExp]>([
    ['filter', (d) => d.filter((r) => r.index > 0), /^Filter over TaskFeed\(training\) would drop records/],
    ['skip', (d) => d.skip(1), /^Skip\(1\) over TaskFeed\(training\) would drop records/],
    ['take', (d) => d.take(3), /^Take\(3\) over TaskFeed\(training\) would leave records unconsumed/],
    ['flatMap', (d) => d.flatMap((r) => [r, r]), /^FlatMap over TaskFeed\(training\) may drop, add or split/],
    ['repeat', (d) => d.repeat(2), /^Repeat\(2\) over TaskFeed\(training\) would read the records again/],
    [
      'unbatch of records',
      (d) => d.map(() => [1, 2]).unbatch(),
      /^Unbatch over TaskFeed\(training\) would split records/,
    ],
    ['zip', (d) => IterDataset.zip([d, d]), /^Zip over TaskFeed\(training\)/],
    ['mix', (d) => IterDataset.mix([d, units([2])]), /^Mix over TaskFeed\(training\)/],
    ['interleave', (d) => d.interleave(() => units([1]), 2), /^Interleave over TaskFeed\(training\)/],
    [
      'pack',
      (d) => d.map((r) => ({ x: [r.index] })).pack({ rowLength: 4 }),
      /^Pack\(rowLength=4, numBins=1\) over TaskFeed\(training\) would merge records out of order/,
    ],
    [
      'bucketBySequenceLength',
      (d) => d.map((r) => [r.index]).bucketBySequenceLength([2], [2, 2]),
      /^BucketBySequenceLength\(\[2\], \[2, 2\]\) over TaskFeed\(training\) would reorder records across tasks/,
    ],
    [
      'a shuffle after a batch',
      (d) => d.batch(2).shuffle({ bufferSize: 4, seed: 1 }),
      /^WindowShuffle\(bufferSize=4, seed=1\) over TaskFeed\(training\) must come right after the records/,
    ],
    [
      'a shuffle after a prefetch',
      (d) => d.prefetch(2).shuffle({ bufferSize: 4, seed: 1 }),
      /^WindowShuffle\(bufferSize=4, seed=1\) over TaskFeed\(training\) must come right after the records/,
    ],
  ])('refuses %s with ERR_ATTRIBUTION naming the transform', async (_name, make, message) => {
    const error = await make(units(SIZES))
      .toArray()
      .then(
        () => undefined,
        (e: unknown) => e as { code?: string; message?: string },
      );
    expect(error?.code).toBe('ERR_ATTRIBUTION');
    expect(error?.message).toMatch(message);
    expect(error?.message).toContain('docs/worker.md');
  });

  it('shuffles within windows that end where a unit ends, so every unit keeps exactly its records', async () => {
    const out = await units(SIZES)
      .map((r) => ({ ...r }))
      .shuffle({ bufferSize: 5, seed: 3 })
      .toArray();
    // Records leave in units: unit u's records are the next SIZES[u] ones, in some order.
    let at = 0;
    SIZES.forEach((size, unit) => {
      const part = out.slice(at, at + size);
      expect(part.every((r) => r.unit === unit)).toBe(true);
      expect(part.map((r) => r.index).sort((a, b) => a - b)).toEqual(
        Array.from({ length: size }, (_, i) => i),
      );
      at += size;
    });
    expect(at).toBe(out.length);
    // Windows of at most 5 inside a unit: record i of unit 2 (12 records) stays in window floor(i / 5).
    const unit2 = out.slice(10, 22);
    expect(unit2.map((r) => Math.floor(r.index / 5))).toEqual(
      unit2.map((_, position) => Math.floor(position / 5)),
    );
    // It does shuffle, and the same seed gives the same order.
    expect(out.map((r) => r.index)).not.toEqual((await units(SIZES).toArray()).map((r) => r.index));
    expect(await units(SIZES).shuffle({ bufferSize: 5, seed: 3 }).toArray()).toEqual(out);
  });

  it('refuses any shuffle where records must keep their order (prediction)', async () => {
    await expect(units(SIZES, true).shuffle({ bufferSize: 4, seed: 1 }).toArray()).rejects.toThrow(
      /^WindowShuffle\(bufferSize=4, seed=1\) over TaskFeed\(training\) would reorder records whose outputs are matched to them by position/,
    );
  });

  it('leaves an unattributed source alone: windows of bufferSize whatever the data', async () => {
    const out = await IterDataset.fromIterable(async function* () {
      for (let i = 0; i < 10; i++) yield i;
    })
      .shuffle({ bufferSize: 4, seed: 3 })
      .toArray();
    expect(out.slice(0, 4).sort()).toEqual([0, 1, 2, 3]);
    expect(out.slice(4, 8).sort()).toEqual([4, 5, 6, 7]);
  });
});

// A model file that imports @edl/data (or @edl/worker) by a path of its own loads a second copy of
// the package beside the worker's. The built package copied to a second folder inside the package
// (so that its own imports resolve as before) is such a copy, loaded beside the first in one child
// process: the worker's copy marks the records, the model's copy must still refuse a transform that
// breaks their counting.
describe('attribution across two copies of @edl/data in one process', () => {
  const repoRoot = fileURLToPath(new URL('../../../../', import.meta.url));
  const packageDir = fileURLToPath(new URL('../../', import.meta.url));
  let secondCopy = '';
  const child = `
const workers = await import(process.argv[1]);
const models = await import(process.argv[2]);
if (workers.IterDataset === models.IterDataset) throw new Error('one copy only');
const records = workers.IterDataset.fromIterator(() => {
  let next = 0;
  const iterator = { next: async () => next < 4 ? { done: false, value: next++ } : { done: true, value: undefined } };
  return workers.attribute(iterator, { source: 'TaskFeed(training)', lastUnit: () => 0, inStep: true, elements: 'records', ordered: false });
}, 'Records');
const seen = models.attributionOf(records.iterator());
try {
  await models.IterDataset.zip([records, records]).toArray();
  console.log(JSON.stringify({ seen: seen?.source ?? null, code: null }));
} catch (error) {
  console.log(JSON.stringify({ seen: seen?.source ?? null, code: error.code, message: error.message }));
}
`;

  beforeAll(() => {
    const build = spawnSync('pnpm', ['exec', 'tsc', '-b', 'packages/data'], {
      cwd: repoRoot,
      encoding: 'utf8',
    });
    expect(build.status, build.stdout + build.stderr).toBe(0);
    secondCopy = mkdtempSync(join(packageDir, '.second-copy-'));
    cpSync(join(packageDir, 'dist'), join(secondCopy, 'dist'), { recursive: true });
    writeFileSync(join(secondCopy, 'package.json'), '{"type":"module"}');
  }, 180_000);

  afterAll(() => {
    if (secondCopy !== '') rmSync(secondCopy, { recursive: true, force: true });
  });

  it("the model's copy reads the worker's attribution and refuses zip with ERR_ATTRIBUTION", () => {
    const urls = [join(packageDir, 'dist'), join(secondCopy, 'dist')].map(
      (dir) => pathToFileURL(join(dir, 'dataset', 'index.js')).href,
    );
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', child, ...urls], {
      encoding: 'utf8',
    });
    const result = JSON.parse(out) as { seen: string | null; code: string | null; message?: string };
    expect(result.seen).toBe('TaskFeed(training)');
    expect(result.code).toBe('ERR_ATTRIBUTION');
    expect(result.message).toMatch(/^Zip over TaskFeed\(training\)/);
  }, 60_000);
});
