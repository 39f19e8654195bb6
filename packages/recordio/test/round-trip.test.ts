import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CompressorName, RecordIOReader, RecordIOWriter } from '../src/index.js';
import { GOLDEN_DIR, seqRecord, streamSha256 } from './helpers/golden.js';
import { decodePlain } from './helpers/plain-decoder.js';
import { randomRecords } from './helpers/random-records.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-rt-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const compressors: CompressorName[] = ['none', 'snappy', 'gzip'];

async function readAll(path: string): Promise<Uint8Array[]> {
  const reader = await RecordIOReader.open(path);
  try {
    const records: Uint8Array[] = [];
    for await (const r of reader.records()) records.push(r);
    return records;
  } finally {
    await reader[Symbol.asyncDispose]();
  }
}

describe('writer -> reader round trips', () => {
  it.each(compressors)('%s: seeded random records (empty, tiny, > 64 KiB)', async (compressor) => {
    const seed = 20240601 + compressors.indexOf(compressor);
    const records = randomRecords(seed, 400);
    expect(records.some((r) => r.length === 0)).toBe(true);
    expect(records.some((r) => r.length > 65536)).toBe(true);
    const path = join(scratch, `random-${compressor}.rio`);
    const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 256 * 1024 });
    for (const r of records.slice(0, 200)) writer.write(r);
    writer.writeBatch(records.slice(200));
    writer.close();
    expect(writer.stats.recordsWritten).toBe(400);
    expect(writer.stats.bytesWritten).toBe(statSync(path).size);

    const back = await readAll(path);
    expect(back).toHaveLength(records.length);
    expect(streamSha256(back)).toBe(streamSha256(records));
    const reader = await RecordIOReader.open(path);
    expect(reader.numChunks).toBe(writer.stats.chunksWritten);
    expect(reader.chunks.every((c) => c.compressor === compressor)).toBe(true);
    reader.close();
  });

  it.each(compressors)('%s: one-record chunks when maxChunkBytes is tiny', async (compressor) => {
    const records = randomRecords(7, 60).filter((r) => r.length > 0);
    const path = join(scratch, `one-per-chunk-${compressor}.rio`);
    const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 1 });
    writer.writeBatch(records);
    writer.close();
    const reader = await RecordIOReader.open(path);
    expect(reader.numChunks).toBe(records.length);
    expect(reader.chunks.every((c) => c.numRecords === 1)).toBe(true);
    const batch = await reader.read(0, records.length);
    expect(streamSha256(batch)).toBe(streamSha256(records));
    reader.close();
  });

  it('splits chunks like the Go writer: before a record that would pass the limit', async () => {
    const path = join(scratch, 'split.rio');
    const writer = await RecordIOWriter.create(path, { compressor: 'none', maxChunkBytes: 10 });
    for (const len of [4, 6, 1, 0, 10, 25, 3]) writer.write(new Uint8Array(len));
    writer.close();
    const reader = await RecordIOReader.open(path);
    // [4, 6] = 10 fits; 1 would make 11 -> new chunk [1, 0]; 10 would make 11 -> [10]; [25] alone; [3].
    expect(reader.chunks.map((c) => c.numRecords)).toEqual([2, 2, 1, 1, 1]);
    reader.close();
  });

  it('reproduces the golden seq stream and writes smaller snappy than the Go writer', async () => {
    const seq = Array.from({ length: 8192 }, (_, i) => seqRecord(i));
    for (const compressor of compressors) {
      const path = join(scratch, `seq-${compressor}.rio`);
      const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 65536 });
      writer.writeBatch(seq);
      writer.close();
      const back = await readAll(path);
      expect(streamSha256(back)).toBe('9ebc5c161a86cd86331671eee603ff24bdc222651dd8cef94201364641631631');
      const reader = await RecordIOReader.open(path);
      // Same chunking rule as the Go writer: the same 15 chunks.
      expect(reader.chunks.slice(0, 3).map((c) => c.numRecords)).toEqual([611, 576, 536]);
      expect(reader.numChunks).toBe(15);
      reader.close();
    }
    const ours = statSync(join(scratch, 'seq-snappy.rio')).size;
    const go = statSync(`${GOLDEN_DIR}seq-snappy-64k.rio`).size;
    expect(ours).toBeLessThan(go);
    // Proper 64 KiB frames compress this repetitive text far better than one frame per record.
    expect(ours).toBeLessThan(go / 2);
  });

  it('strings are written as UTF-8 and batches copy from file to file', async () => {
    const path = join(scratch, 'strings.rio');
    const writer = await RecordIOWriter.create(path, { compressor: 'gzip', gzipLevel: 9 });
    writer.write('héllo wörld');
    writer.write('');
    writer.writeBatch(['a', new Uint8Array([0, 255])]);
    writer.close();
    const reader = await RecordIOReader.open(path);
    const batch = await reader.read(0, 4);
    expect(Buffer.from(batch.get(0)).toString('utf8')).toBe('héllo wörld');
    expect(batch.get(1).length).toBe(0);
    expect([...batch.get(3)]).toEqual([0, 255]);

    const copy = join(scratch, 'copy.rio');
    const copier = await RecordIOWriter.create(copy, { compressor: 'snappy' });
    copier.writeBatch(batch);
    copier.close();
    expect(streamSha256(await readAll(copy))).toBe(streamSha256(batch));
    reader.close();
  });

  it('an empty file: zero chunks, zero records, zero bytes', async () => {
    const path = join(scratch, 'empty.rio');
    const writer = await RecordIOWriter.create(path);
    writer.close();
    writer.close();
    expect(statSync(path).size).toBe(0);
    expect(readFileSync(path).length).toBe(0);
    const reader = await RecordIOReader.open(path);
    expect([reader.numRecords, reader.numChunks]).toEqual([0, 0]);
    expect(decodePlain(readFileSync(path))).toEqual([]);
    reader.close();
    expect(() => writer.write('late')).toThrow(expect.objectContaining({ code: 'CLOSED' }));
  });
});
