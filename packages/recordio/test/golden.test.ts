import { afterAll, describe, expect, it } from 'vitest';
import { RecordIOReader } from '../src/index.js';
import { readManifest, StreamHash, seqRecord, streamSha256 } from './helpers/golden.js';

const intact = readManifest().filter((e) => !/^(bad-crc|truncated)/.test(e.file));
const opened: RecordIOReader[] = [];
afterAll(() => {
  for (const r of opened) r.close();
});

async function open(path: string): Promise<RecordIOReader> {
  const reader = await RecordIOReader.open(path);
  opened.push(reader);
  return reader;
}

describe('golden files written by the Go reference', () => {
  it.each(intact.map((e) => [e.file, e] as const))('%s reads back as MANIFEST says', async (_name, entry) => {
    const reader = await open(entry.path);
    expect(reader.numRecords).toBe(entry.numRecords);
    expect(reader.fileSize).toBe(entry.bytes);

    const viaRead = new StreamHash();
    for (const record of await reader.read(0, reader.numRecords)) viaRead.add(record);
    expect(viaRead.count).toBe(entry.numRecords);
    expect(viaRead.bytes).toBe(entry.recordBytes);
    expect(viaRead.digest()).toBe(entry.streamSha256);

    const viaIterator = new StreamHash();
    for await (const record of reader.records()) viaIterator.add(record);
    expect(viaIterator.count).toBe(entry.numRecords);
    expect(viaIterator.digest()).toBe(entry.streamSha256);

    const viaSync = new StreamHash();
    for (const record of reader.readSync(0, reader.numRecords)) viaSync.add(record);
    expect(viaSync.digest()).toBe(entry.streamSha256);
  });

  it('indexes the 64k files into 15 chunks whose counts add up', async () => {
    for (const compressor of ['none', 'snappy', 'gzip'] as const) {
      const reader = await open(intact.find((e) => e.file === `seq-${compressor}-64k.rio`)!.path);
      expect(reader.numChunks).toBe(15);
      expect(reader.chunks).toHaveLength(15);
      expect(reader.chunks.slice(0, 3).map((c) => c.numRecords)).toEqual([611, 576, 536]);
      let next = 0;
      let offset = 0;
      for (const chunk of reader.chunks) {
        expect(chunk.compressor).toBe(compressor);
        expect(chunk.firstRecord).toBe(next);
        expect(chunk.offset).toBe(offset);
        next += chunk.numRecords;
        offset += 20 + chunk.compressedSize;
      }
      expect(next).toBe(8192);
      expect(offset).toBe(reader.fileSize);
    }
  });

  it('reads ranges that start and end inside chunks', async () => {
    const reader = await open(intact.find((e) => e.file === 'seq-snappy-64k.rio')!.path);
    for (const [start, count] of [
      [0, 1],
      [610, 2],
      [1000, 3000],
      [8191, 1],
      [5000, 0],
    ] as const) {
      const batch = await reader.read(start, count);
      expect(batch.length).toBe(count);
      expect(batch.firstRecord).toBe(start);
      const expected = streamSha256(Array.from({ length: count }, (_, i) => seqRecord(start + i)));
      expect(streamSha256(batch)).toBe(expected);
      const fromIterator: Uint8Array[] = [];
      for await (const r of reader.records(start, count)) fromIterator.push(r);
      expect(fromIterator).toHaveLength(count);
      expect(streamSha256(fromIterator)).toBe(expected);
      if (count > 0)
        expect(Buffer.from(batch.get(count - 1)).toString()).toBe(seqRecord(start + count - 1).toString());
    }
  });

  it('iterates across many small batches with read-ahead', async () => {
    const entry = intact.find((e) => e.file === 'seq-gzip-64k.rio')!;
    const reader = await RecordIOReader.open(entry.path, { batchBytes: 1 });
    opened.push(reader);
    const hash = new StreamHash();
    let batches = 0;
    for await (const batch of reader.batches()) {
      batches++;
      for (const r of batch) hash.add(r);
    }
    expect(batches).toBe(15);
    expect(hash.digest()).toBe(entry.streamSha256);
  });

  it('serves next() calls made without waiting, in order', async () => {
    const reader = await open(intact.find((e) => e.file === 'seq-snappy-64k.rio')!.path);
    const iterator = reader.records(609, 4)[Symbol.asyncIterator]();
    const results = await Promise.all([
      iterator.next(),
      iterator.next(),
      iterator.next(),
      iterator.next(),
      iterator.next(),
    ]);
    expect(results.slice(0, 4).map((r) => Buffer.from(r.value!))).toEqual(
      [609, 610, 611, 612].map(seqRecord),
    );
    expect(results[4]!.done).toBe(true);
  });

  it('concurrent reads on one reader, and close() while reads are in flight', async () => {
    const entry = intact.find((e) => e.file === 'seq-gzip-64k.rio')!;
    const reader = await RecordIOReader.open(entry.path);
    const starts = Array.from({ length: 24 }, (_, i) => (i * 337) % 8000);
    const batches = await Promise.all(starts.map((s) => reader.read(s, 150)));
    batches.forEach((batch, i) => {
      expect(Buffer.from(batch.get(149)).toString()).toBe(seqRecord(starts[i]! + 149).toString());
    });
    const inFlight = starts.map((s) => reader.read(s, 150));
    reader.close();
    const outcomes = await Promise.allSettled(inFlight);
    for (const outcome of outcomes) {
      if (outcome.status === 'fulfilled') expect(outcome.value.length).toBe(150);
      else expect(outcome.reason).toMatchObject({ name: 'RecordIOError', code: 'CLOSED' });
    }
    // Batches read before close stay valid: they own their memory.
    expect(Buffer.from(batches[0]!.get(0)).toString()).toBe(seqRecord(starts[0]!).toString());
  });

  it('stops cleanly when the consumer breaks early', async () => {
    const reader = await open(intact.find((e) => e.file === 'seq-none-64k.rio')!.path);
    let seen = 0;
    for await (const record of reader.records()) {
      expect(Buffer.from(record)).toEqual(seqRecord(seen));
      if (++seen === 700) break;
    }
    expect(seen).toBe(700);
  });
});
