import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { SeededRandom } from '@edl/common';
import { parseExamples } from '@edl/proto/example';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClickLogSynthesizer, clickLogSpec, generateClickLog, rocAuc, ZipfSampler } from '../src/index.js';
import { readTfRecords } from './helpers/click-batches.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-zoo-clicks-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Sum of `1 / k^s` for k in [1, n]. */
function harmonic(n: number, s: number): number {
  let sum = 0;
  for (let k = n; k >= 1; k--) sum += k ** -s;
  return sum;
}

describe('ZipfSampler', () => {
  it('draws ranks with the Zipf law frequencies', () => {
    const n = 40;
    const s = 1.1;
    const draws = 200_000;
    const sampler = new ZipfSampler(n, s);
    const random = new SeededRandom(3);
    const counts = new Float64Array(n + 1);
    for (let i = 0; i < draws; i++) counts[sampler.sample(random)]! += 1;
    expect(counts[0]).toBe(0);
    const h = harmonic(n, s);
    for (let k = 1; k <= n; k++) {
      const p = k ** -s / h;
      // Within 4.5 standard errors of a binomial count.
      expect(Math.abs((counts[k] as number) - draws * p)).toBeLessThan(4.5 * Math.sqrt(draws * p * (1 - p)));
    }
  });

  it('samples 10^7 ranks in constant memory, the head and the tail in their proportions', () => {
    const n = 10_000_000;
    const sampler = new ZipfSampler(n, 1.1);
    const random = new SeededRandom(9);
    const draws = 400_000;
    let first = 0;
    let top1000 = 0;
    let max = 0;
    for (let i = 0; i < draws; i++) {
      const k = sampler.sample(random);
      if (k === 1) first++;
      if (k <= 1000) top1000++;
      max = Math.max(max, k);
    }
    const h = harmonic(n, 1.1);
    const pTop = harmonic(1000, 1.1) / h;
    expect(Math.abs(first / draws - 1 / h)).toBeLessThan(0.003);
    expect(Math.abs(top1000 / draws - pTop)).toBeLessThan(0.005);
    expect(max).toBeGreaterThan(1_000_000);
    expect(max).toBeLessThanOrEqual(n);
  });

  it('refuses a bad size or exponent, naming it', () => {
    expect(() => new ZipfSampler(0, 1.1)).toThrow(/zipf\.n/);
    expect(() => new ZipfSampler(10, 0)).toThrow(/zipf\.exponent/);
  });
});

describe('rocAuc', () => {
  it('is the share of (positive, negative) pairs ranked right, ties one half', () => {
    const random = new SeededRandom(5);
    const labels = Array.from({ length: 300 }, () => (random.next() < 0.3 ? 1 : 0));
    // Scores on a coarse grid, so that many tie.
    const scores = labels.map((l) => Math.round((l * 0.3 + random.next()) * 10) / 10);
    let right = 0;
    let pairs = 0;
    labels.forEach((a, i) => {
      labels.forEach((b, j) => {
        if (a !== 1 || b !== 0) return;
        pairs++;
        right += scores[i]! > scores[j]! ? 1 : scores[i] === scores[j] ? 0.5 : 0;
      });
    });
    expect(rocAuc(labels, scores)).toBeCloseTo(right / pairs, 12);
    expect(rocAuc([0, 0, 1, 1], [0.1, 0.2, 0.3, 0.4])).toBe(1);
    expect(rocAuc([1, 1, 0, 0], [0.1, 0.2, 0.3, 0.4])).toBe(0);
    expect(rocAuc([1, 1], [0.1, 0.2])).toBeNaN();
    expect(() => rocAuc([0, 2], [0.1, 0.2])).toThrow(/label of 0 or 1 at index 1/);
  });
});

describe('generateClickLog', () => {
  it('writes Examples of Zipf ids and planted clicks; the same seed gives the same bytes', async () => {
    const options = { records: 6000, files: 2, seed: 11, vocabulary: 1_000_000 } as const;
    const a = await generateClickLog({ dir: path.join(dir, 'a'), ...options });
    const b = await generateClickLog({ dir: path.join(dir, 'b'), ...options });
    expect(a.files.map((f) => [path.basename(f.path), f.records])).toEqual([
      ['clicks-00000-of-00002.tfrecord', 3000],
      ['clicks-00001-of-00002.tfrecord', 3000],
    ]);
    a.files.forEach((f, i) => {
      expect(readFileSync(f.path).equals(readFileSync(b.files[i]!.path))).toBe(true);
    });

    const records = await readTfRecords(a.files.map((f) => f.path));
    const parsed = parseExamples(records, clickLogSpec());
    expect(parsed.ids.shape).toEqual([6000, 3]);
    expect(parsed.numeric.shape).toEqual([6000, 3]);
    const ids = parsed.ids.values;
    expect(ids.every((id) => Number.isInteger(id) && id >= 0 && id < 1_000_000)).toBe(true);
    // Feature 0's most frequent id is rank 1 (id 0), near its Zipf share 1/H(10^6, 1.1) ~ 12%.
    const zeros = Array.from({ length: 6000 }, (_, i) => ids[i * 3]).filter((id) => id === 0).length;
    expect(zeros / 6000).toBeGreaterThan(0.09);
    expect(zeros / 6000).toBeLessThan(0.16);
    // A long tail: many distinct ids, most of them seen once.
    expect(new Set(ids).size).toBeGreaterThan(4000);

    // The clicks follow the planted model: its scores rank them far better than chance.
    const clicks = parsed.click.values;
    const ctr = clicks.reduce((n, c) => n + c, 0) / clicks.length;
    expect(ctr).toBeGreaterThan(0.15);
    expect(ctr).toBeLessThan(0.6);
    const planted = new ClickLogSynthesizer({ seed: 11 }).planted;
    const scores = Array.from({ length: 6000 }, (_, i) =>
      planted.score(ids.subarray(i * 3, i * 3 + 3), parsed.numeric.values.subarray(i * 3, i * 3 + 3)),
    );
    expect(rocAuc(clicks, scores)).toBeGreaterThan(0.85);
    // Another seed, other clicks.
    const other = new ClickLogSynthesizer({ seed: 12, vocabulary: 1_000_000 }).batch(6000);
    expect(Array.from(other.ids)).not.toEqual(Array.from(ids));
  });
});
