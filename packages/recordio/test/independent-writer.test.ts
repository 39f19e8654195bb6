import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RecordIOReader } from '../src/index.js';
import { seqRecord, streamSha256 } from './helpers/golden.js';
import { decodePlainRecords } from './helpers/plain-decoder.js';
import { type ChunkEncoding, compressSnappyBlock, encodeChunk } from './helpers/plain-encoder.js';
import { randomRecords } from './helpers/random-records.js';
import { decodeSnappyBlock } from './helpers/snappy-block.js';

// Files from a writer that is not ours: mixed stored/compressed snappy frames, padding and
// skippable frames, tiny frames, gzip at every level and with several members.
const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-indep-writer-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function readBack(
  name: string,
  chunks: Buffer[],
): Promise<{ sha: string; count: number; numChunks: number }> {
  const path = join(scratch, name);
  writeFileSync(path, Buffer.concat(chunks));
  const reader = await RecordIOReader.open(path);
  const records: Uint8Array[] = [];
  for await (const r of reader.records()) records.push(r);
  const numChunks = reader.numChunks;
  reader.close();
  return { sha: streamSha256(records), count: records.length, numChunks };
}

function split<T>(items: readonly T[], parts: number): T[][] {
  const size = Math.ceil(items.length / parts);
  return Array.from({ length: parts }, (_, i) => items.slice(i * size, (i + 1) * size));
}

describe('files from an independent writer', () => {
  it('the test compressor round-trips through the test decoder (self-check)', () => {
    for (const record of randomRecords(3, 16)) {
      expect(Buffer.from(decodeSnappyBlock(compressSnappyBlock(record)))).toEqual(Buffer.from(record));
    }
    const text = Buffer.from('abcabcabcabc'.repeat(3000));
    expect(compressSnappyBlock(text).length).toBeLessThan(text.length / 10);
  });

  it('snappy: stored and compressed frames mixed, padding and skippable frames, odd frame sizes', async () => {
    const seq = Array.from({ length: 3000 }, (_, i) => seqRecord(i));
    const layouts: ChunkEncoding[] = [
      {
        compressor: 'snappy',
        layout: { frameBytes: 65536, stored: (i) => i % 2 === 1, padBefore: (i) => i % 3 === 0 },
      },
      { compressor: 'snappy', layout: { frameBytes: 1, stored: () => false } },
      {
        compressor: 'snappy',
        layout: { frameBytes: 777, stored: (i) => i % 5 === 0, padBefore: () => true },
      },
      { compressor: 'snappy', layout: { frameBytes: 65536, stored: () => true } },
    ];
    const groups = split(seq, layouts.length);
    const chunks = groups.map((g, i) => encodeChunk(g, layouts[i]!));
    // The plain decoder agrees with the encoder before the addon is asked.
    expect(streamSha256(decodePlainRecords(Buffer.concat(chunks)))).toBe(streamSha256(seq));
    const back = await readBack('mixed-snappy.rio', chunks);
    expect(back).toEqual({ sha: streamSha256(seq), count: 3000, numChunks: 4 });
  });

  it('snappy with empty and > 64 KiB records across frame boundaries', async () => {
    const records = randomRecords(11, 120);
    const chunks = split(records, 3).map((g, k) =>
      encodeChunk(g, {
        compressor: 'snappy',
        layout: { frameBytes: [65536, 4096, 100][k]!, stored: (i) => (i + k) % 3 === 0 },
      }),
    );
    const back = await readBack('big-snappy.rio', chunks);
    expect(back.sha).toBe(streamSha256(records));
  });

  it('gzip at every level 0-9, and chunks of several gzip members', async () => {
    const records = randomRecords(12, 200);
    const groups = split(records, 12);
    const chunks = groups.map((g, k) =>
      encodeChunk(g, { compressor: 'gzip', level: k % 10, members: k >= 10 ? 3 : 1 }),
    );
    const back = await readBack('gzip-levels.rio', chunks);
    expect(back).toEqual({ sha: streamSha256(records), count: 200, numChunks: 12 });
  });

  it('mixed compressors in one file, and a chunk with no records', async () => {
    const records = randomRecords(13, 90);
    const [a, b, c] = split(records, 3);
    const chunks = [
      encodeChunk(a!, { compressor: 'none' }),
      encodeChunk([], { compressor: 'gzip', level: 6 }),
      encodeChunk(b!, { compressor: 'snappy', layout: { frameBytes: 30000, stored: () => false } }),
      encodeChunk([], { compressor: 'none' }),
      encodeChunk(c!, { compressor: 'gzip', level: 1 }),
    ];
    const back = await readBack('mixed.rio', chunks);
    expect(back).toEqual({ sha: streamSha256(records), count: 90, numChunks: 5 });
  });

  it('a snappy frame with a wrong CRC-32C is a CHECKSUM error on its chunk', async () => {
    const good = encodeChunk([Buffer.from('first')], { compressor: 'none' });
    const bad = encodeChunk([Buffer.from('hello hello hello hello')], {
      compressor: 'snappy',
      layout: { frameBytes: 65536, stored: () => false },
    });
    // Flip a bit of the frame CRC (after the 20-byte header, the 10-byte stream identifier and the
    // 4-byte frame header), then fix the chunk CRC so only the frame check can catch it.
    bad[20 + 10 + 4] = (bad[20 + 10 + 4] as number) ^ 1;
    const { crc32 } = await import('node:zlib');
    bad.writeUInt32LE(crc32(bad.subarray(20)) >>> 0, 4);
    const path = join(scratch, 'bad-frame-crc.rio');
    writeFileSync(path, Buffer.concat([good, bad]));
    const reader = await RecordIOReader.open(path);
    const records: string[] = [];
    const error = await (async () => {
      for await (const r of reader.records()) records.push(Buffer.from(r).toString());
    })().catch((e: unknown) => e);
    expect(records).toEqual(['first']);
    // The offset is the bad frame's: after the chunk header and the stream identifier frame.
    expect(error).toMatchObject({
      name: 'RecordIOError',
      code: 'CHECKSUM',
      chunk: 1,
      offset: good.length + 20 + 10,
    });
    reader.close();
  });
});
