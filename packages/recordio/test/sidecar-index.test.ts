import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import {
  buildLocalSidecarIndex,
  decodeSidecarIndex,
  encodeSidecarIndex,
  RecordIOError,
  RecordIOReader,
  RecordIOWriter,
  TFRecordReader,
  TFRecordWriter,
} from '../src/index.js';
import { GOLDEN_DIR } from './helpers/golden.js';

const TFRECORD_DIR = join(import.meta.dirname, 'golden-tfrecord');
const scratch = mkdtempSync(join(tmpdir(), 'edl-sidecar-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('sidecar index files', () => {
  it('RecordIO: lists exactly the chunks of the native index, and survives a round trip', async () => {
    const path = join(scratch, 'many.rio');
    const writer = await RecordIOWriter.create(path, { compressor: 'gzip', maxChunkBytes: 4096 });
    writer.writeBatch(Array.from({ length: 3000 }, (_, i) => new Uint8Array(i % 97).fill(i % 256)));
    writer.close();
    const index = await buildLocalSidecarIndex(path, 'recordio');
    const reader = await RecordIOReader.open(path);
    expect(index.chunks).toEqual(reader.chunks);
    expect(index.numRecords).toBe(3000);
    expect(index.dataSize).toBe(reader.fileSize);
    reader.close();
    const bytes = encodeSidecarIndex(index);
    // 40-byte header, 12 bytes per chunk, a 4-byte CRC.
    expect(bytes.byteLength).toBe(40 + 12 * index.chunks.length + 4);
    expect(decodeSidecarIndex(bytes, 'recordio', `${path}.idx`)).toEqual(index);
    // The check covers the first and last chunk headers, as the data holds them.
    const data = readFileSync(path);
    const last = index.chunks[index.chunks.length - 1]?.offset ?? 0;
    expect(index.check).toBe(crc32(data.subarray(last, last + 20), crc32(data.subarray(0, 20))));
  });

  it('TFRecord: the offset of every Nth record, blocks of about 64 KiB that tile the file', async () => {
    const path = join(scratch, 'many.tfrecord');
    const writer = TFRecordWriter.create(path);
    for (let i = 0; i < 5000; i++) writer.write(new Uint8Array(50 + (i % 200)).fill(i % 256));
    await writer.close();
    const index = await buildLocalSidecarIndex(path, 'tfrecord');
    const reader = await TFRecordReader.open(path);
    expect(index.numRecords).toBe(reader.numRecords);
    for (const block of index.blocks) {
      expect(block.offset).toBe(reader.recordOffset(block.firstRecord));
      expect(block.offset + block.byteLength).toBe(reader.recordOffset(block.firstRecord + block.numRecords));
      expect(block.byteLength).toBeLessThan(3 * 64 * 1024);
    }
    reader.close();
    expect(index.blocks.length).toBeGreaterThan(5);
    const bytes = encodeSidecarIndex(index);
    expect(bytes.byteLength).toBe(40 + 8 * index.blocks.length + 4);
    expect(decodeSidecarIndex(bytes, 'tfrecord', `${path}.idx`)).toEqual(index);
  });

  it('refuses damaged, foreign and compressed input with an error naming the file', async () => {
    const index = await buildLocalSidecarIndex(join(GOLDEN_DIR, 'hello-snappy.rio'), 'recordio');
    const bytes = encodeSidecarIndex(index);
    const name = '/data/hello.rio.idx';
    const flipped = Uint8Array.from(bytes);
    flipped[44] = (flipped[44] ?? 0) ^ 1;
    expect(() => decodeSidecarIndex(flipped, 'recordio', name)).toThrow(
      `CHECKSUM: ${name}: not a usable sidecar index: CRC-32 mismatch`,
    );
    expect(() => decodeSidecarIndex(bytes.subarray(0, 30), 'recordio', name)).toThrow(/^TRUNCATED: /);
    expect(() => decodeSidecarIndex(bytes, 'tfrecord', name)).toThrow(/format id 1, not tfrecord/);
    expect(() => decodeSidecarIndex(new TextEncoder().encode('x'.repeat(64)), 'recordio', name)).toThrow(
      /^BAD_MAGIC: /,
    );
    await expect(
      buildLocalSidecarIndex(join(TFRECORD_DIR, 'examples.tfrecord.gz'), 'tfrecord'),
    ).rejects.toMatchObject({
      code: 'NOT_SEEKABLE',
    });
    await expect(
      buildLocalSidecarIndex(join(TFRECORD_DIR, 'truncated.tfrecord'), 'tfrecord'),
    ).rejects.toMatchObject({
      code: 'TRUNCATED',
    });
  });

  it('never throws anything but a RecordIOError on mutated input (a fuzz pass over every byte)', async () => {
    const index = await buildLocalSidecarIndex(join(TFRECORD_DIR, 'examples.tfrecord'), 'tfrecord');
    const bytes = encodeSidecarIndex(index);
    for (let at = 0; at < bytes.byteLength; at++) {
      for (const mask of [1, 0x80, 0xff]) {
        const mutated = Uint8Array.from(bytes);
        mutated[at] = (mutated[at] ?? 0) ^ mask;
        expect(() => decodeSidecarIndex(mutated, 'tfrecord', 'x.idx')).toThrow(RecordIOError);
      }
      expect(() => decodeSidecarIndex(bytes.subarray(0, at), 'tfrecord', 'x.idx')).toThrow(RecordIOError);
    }
  });
});
