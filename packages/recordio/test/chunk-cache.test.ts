import { describe, expect, it } from 'vitest';
import { RecordIOError, RecordIOReader } from '../src/index.js';
import { GOLDEN_DIR } from './helpers/golden.js';
import { mulberry32 } from './helpers/random-records.js';

describe('reader.get (chunk cache)', () => {
  it('random gets equal sequential reads and decode each chunk once', async () => {
    for (const name of ['seq-gzip-64k.rio', 'seq-snappy-64k.rio', 'seq-none-64k.rio']) {
      await using reader = await RecordIOReader.open(`${GOLDEN_DIR}${name}`);
      const all = await reader.read(0, reader.numRecords);
      const rand = mulberry32(5);
      const indices = Array.from({ length: 3000 }, () => Math.floor(rand() * reader.numRecords));
      const got = await reader.getMany(indices);
      got.forEach((record, k) => {
        expect(record).toEqual(all.get(indices[k] as number));
      });
      for (const i of indices.slice(0, 200)) expect(reader.getSync(i)).toEqual(all.get(i));
      const stats = reader.chunkCacheStats;
      expect(stats.decodes).toBe(reader.numChunks);
      expect(stats.hits + stats.misses).toBe(3200);
    }
  });

  it('stays within chunkCacheBytes, and records outlive eviction and close', async () => {
    const capacity = 200 * 1024;
    const reader = await RecordIOReader.open(`${GOLDEN_DIR}seq-none-64k.rio`, { chunkCacheBytes: capacity });
    const all = await reader.read(0, reader.numRecords);
    const first = await reader.get(0);
    for (let i = 0; i < reader.numRecords; i += 41) {
      await reader.get(i);
      expect(reader.chunkCacheStats.bytes).toBeLessThanOrEqual(capacity);
    }
    expect(reader.chunkCacheStats.evictions).toBeGreaterThan(0);
    reader.close();
    expect(first).toEqual(all.get(0));
    await expect(reader.get(0)).rejects.toMatchObject({ code: 'CLOSED' });
  });

  it('nearby reads share one decode even when issued concurrently', async () => {
    await using reader = await RecordIOReader.open(`${GOLDEN_DIR}seq-gzip-64k.rio`);
    const chunk = reader.chunks[3];
    if (chunk === undefined) throw new Error('golden file has fewer chunks than expected');
    await Promise.all(Array.from({ length: chunk.numRecords }, (_, k) => reader.get(chunk.firstRecord + k)));
    expect(reader.chunkCacheStats.decodes).toBe(1);
  });

  it('reports a corrupt chunk with its location, and still serves the good ones', async () => {
    await using reader = await RecordIOReader.open(`${GOLDEN_DIR}bad-crc-none-64k.rio`, {
      onCorruptChunk: 'skip',
    });
    let bad = 0;
    for (const chunk of reader.chunks) {
      try {
        const record = await reader.get(chunk.firstRecord);
        expect(record).toBeInstanceOf(Uint8Array);
      } catch (error) {
        bad++;
        expect(error).toBeInstanceOf(RecordIOError);
        expect(error).toMatchObject({ code: 'CHECKSUM', chunk: chunk.index, path: reader.path });
      }
    }
    expect(bad).toBeGreaterThan(0);
    expect(bad).toBeLessThan(reader.numChunks);
  });

  it('checks the index', async () => {
    await using reader = await RecordIOReader.open(`${GOLDEN_DIR}hello-none.rio`);
    await expect(reader.get(reader.numRecords)).rejects.toMatchObject({ code: 'OUT_OF_RANGE' });
    await expect(reader.get(-1)).rejects.toThrow(RangeError);
    await expect(reader.get('1' as unknown as number)).rejects.toThrow(TypeError);
    expect(() => reader.getSync(1.5)).toThrow('for index');
  });
});
