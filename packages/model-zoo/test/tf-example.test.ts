import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseExamples } from '@edl/proto/example';
import { TFRecordReader } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  generateTfExampleRecords,
  TF_EXAMPLE_CLASSES,
  TF_EXAMPLE_FEATURES,
  TF_EXAMPLE_SPEC,
} from '../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-zoo-tf-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('generateTfExampleRecords', () => {
  it('writes TFRecord files of Examples that parse with the model spec; same seed, same bytes', async () => {
    const a = await generateTfExampleRecords({ dir: path.join(dir, 'a'), records: 300, files: 2, seed: 5 });
    const b = await generateTfExampleRecords({ dir: path.join(dir, 'b'), records: 300, files: 2, seed: 5 });
    const gz = await generateTfExampleRecords({
      dir: path.join(dir, 'gz'),
      records: 300,
      files: 1,
      seed: 5,
      compression: 'gzip',
    });
    expect(a.files.map((f) => [path.basename(f.path), f.records])).toEqual([
      ['examples-00000-of-00002.tfrecord', 150],
      ['examples-00001-of-00002.tfrecord', 150],
    ]);
    expect(path.basename(gz.files[0]?.path as string)).toBe('examples-00000-of-00001.tfrecord.gz');
    a.files.forEach((f, i) => {
      expect(readFileSync(f.path).equals(readFileSync(b.files[i]?.path as string))).toBe(true);
    });
    const labels = new Set<number>();
    let defaults = 0;
    const all: number[] = [];
    for (const file of [...a.files, ...gz.files]) {
      const reader = await TFRecordReader.open(file.path);
      for await (const batch of reader.batches()) {
        const parsed = parseExamples(batch, TF_EXAMPLE_SPEC);
        expect(parsed.x.shape).toEqual([batch.length, TF_EXAMPLE_FEATURES]);
        for (const label of parsed.label.values) labels.add(label);
        all.push(...parsed.label.values);
        expect(parsed.weight.values.every((w) => w === 1)).toBe(true);
        // Every tenth Example omits weight: with another default it shows.
        const missing = parseExamples(batch, { weight: { type: 'float32', shape: [], default: -1 } });
        defaults += missing.weight.values.filter((w) => w === -1).length;
        batch.release();
      }
      reader.close();
    }
    expect([...labels].sort()).toEqual(Array.from({ length: TF_EXAMPLE_CLASSES }, (_, i) => i));
    expect(defaults).toBe(60);
    // The gzip file holds the same Examples as the two plain ones.
    expect(all.slice(300)).toEqual(all.slice(0, 300));
  });
});
