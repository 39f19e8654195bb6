import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DatasetError } from '../../src/dataset/errors.js';
import { MapDataset } from '../../src/dataset/map-dataset.js';
import { RecordIODataSource } from '../../src/dataset/sources/recordio-data-source.js';
import { assertCheckpointRoundTrip } from '../helpers/checkpoint.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-data-rio-'));
const decoder = new TextDecoder();
const text = (r: Uint8Array | undefined) => decoder.decode(r);
/** File f holds records "f<f>-<i>"; small chunks so a file has many. */
const sizes = [37, 0, 120, 5];
const paths = sizes.map((_, f) => join(scratch, `part-${f}.rio`));
const expected = sizes.flatMap((n, f) => Array.from({ length: n }, (_, i) => `f${f}-${i}`));

beforeAll(async () => {
  for (const [f, n] of sizes.entries()) {
    const writer = await RecordIOWriter.create(paths[f]!, {
      compressor: f % 2 === 0 ? 'snappy' : 'gzip',
      maxChunkBytes: 64,
    });
    for (let i = 0; i < n; i++) writer.write(new TextEncoder().encode(`f${f}-${i}`));
    writer.close();
  }
});
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('RecordIODataSource', () => {
  it('reads every record of the files in order, by random access', async () => {
    const source = await RecordIODataSource.open(paths, { cacheChunks: 2 });
    try {
      expect(source.length).toBe(expected.length);
      const all = await Promise.all(expected.map((_, i) => source.get(i)));
      expect(all.map(text)).toEqual(expected);
      // Backwards and scattered, through a shuffled dataset.
      const shuffled = MapDataset.source(source).shuffle(3).map(text);
      const values = await shuffled.toIterDataset({ threads: 4, prefetch: 16 }).toArray();
      expect([...values].sort()).toEqual([...expected].sort());
      expect(values).not.toEqual(expected);
      expect(String(source)).toBe('RecordIODataSource(4 files, 162 records)');
      await expect(source.get(162)).rejects.toThrow(RangeError);
    } finally {
      source.close();
    }
  });

  it('is re-created from its plain description', async () => {
    const source = await RecordIODataSource.open(paths);
    const description = JSON.parse(JSON.stringify(source.describe()));
    expect(description).toEqual({ type: 'recordio', paths });
    const again = await RecordIODataSource.fromDescription(description);
    try {
      for (const i of [0, 36, 37, 100, 161]) expect(text(await again.get(i))).toBe(text(await source.get(i)));
    } finally {
      source.close();
      again.close();
    }
    await expect(RecordIODataSource.fromDescription({ type: 'text', paths })).rejects.toThrow(DatasetError);
  });

  it('batches and checkpoints through the dataset API', async () => {
    const source = await RecordIODataSource.open(paths);
    try {
      const ds = MapDataset.source(source).map(text).batch(10).toIterDataset({ threads: 3, prefetch: 4 });
      const values = await assertCheckpointRoundTrip(() => ds.iterator(), 18, { window: 4 });
      expect(values.flat()).toEqual(expected);
    } finally {
      source.close();
    }
  });

  it('names a missing file', async () => {
    await expect(RecordIODataSource.open([paths[0]!, join(scratch, 'missing.rio')])).rejects.toThrow(
      /missing\.rio/,
    );
    await expect(RecordIODataSource.open([])).rejects.toThrow(
      new TypeError(
        'Expected a path or a non-empty array of paths for paths but received an array of length 0',
      ),
    );
  });
});
