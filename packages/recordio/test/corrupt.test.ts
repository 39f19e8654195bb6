import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RecordIOError, RecordIOReader } from '../src/index.js';
import { GOLDEN_DIR, seqRecord } from './helpers/golden.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-corrupt-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function collect(reader: RecordIOReader, start?: number, count?: number) {
  const records: Buffer[] = [];
  let error: unknown;
  try {
    for await (const r of reader.records(start, count)) records.push(Buffer.from(r));
  } catch (e) {
    error = e;
  }
  return { records, error };
}

function expectRecordIOError(error: unknown, code: string): RecordIOError {
  expect(error).toBeInstanceOf(RecordIOError);
  const e = error as RecordIOError;
  expect(e.code).toBe(code);
  return e;
}

describe('corrupt files', () => {
  it('bad-crc: read() fails with CHECKSUM on chunk 0, naming the file, chunk and offset', async () => {
    const path = `${GOLDEN_DIR}bad-crc-none-64k.rio`;
    const reader = await RecordIOReader.open(path);
    expect(reader.numRecords).toBe(8192);
    const error = await reader.read(0, 10).catch((e: unknown) => e);
    const e = expectRecordIOError(error, 'CHECKSUM');
    expect(e.chunk).toBe(0);
    expect(e.offset).toBe(0);
    expect(e.path).toBe(path);
    expect(e.message.startsWith(`CHECKSUM: chunk 0 at byte 0 of ${path}: `)).toBe(true);
    expect(e.message).not.toContain('\n');
    // The stack starts at this test: no frame of the addon or of @edl/recordio's internals.
    expect(e.stack!.split('\n')[1]).toContain('corrupt.test.ts');
    let syncError: RecordIOError | undefined;
    try {
      reader.readSync(0, 10);
    } catch (error) {
      syncError = error as RecordIOError;
    }
    expect(syncError?.code).toBe('CHECKSUM');
    expect(syncError!.stack!.split('\n')[1]).toContain('corrupt.test.ts');
    // Later chunks are intact.
    const batch = await reader.read(611, 5);
    expect(Buffer.from(batch.get(0))).toEqual(seqRecord(611));
    reader.close();
  });

  it('bad-crc: records() throws CHECKSUM before yielding anything', async () => {
    const reader = await RecordIOReader.open(`${GOLDEN_DIR}bad-crc-none-64k.rio`);
    const { records, error } = await collect(reader);
    expect(records).toHaveLength(0);
    expect(expectRecordIOError(error, 'CHECKSUM').chunk).toBe(0);
    reader.close();
  });

  it('bad-crc in skip mode: skips chunk 0 (611 records) and delivers the rest', async () => {
    const reader = await RecordIOReader.open(`${GOLDEN_DIR}bad-crc-none-64k.rio`, { onCorruptChunk: 'skip' });
    const { records, error } = await collect(reader);
    expect(error).toBeUndefined();
    expect(records).toHaveLength(8192 - 611);
    expect(records[0]).toEqual(seqRecord(611));
    expect(records.at(-1)).toEqual(seqRecord(8191));
    const skipped = reader.skipped;
    expect(skipped.chunks).toBe(1);
    expect(skipped.records).toBe(611);
    expect(skipped.faults).toHaveLength(1);
    expect(skipped.faults[0]!.code).toBe('CHECKSUM');
    expect(skipped.faults[0]!.chunk).toBe(0);
    // Reading the bad chunk again does not count it twice.
    const batch = await reader.read(0, 1000);
    expect(batch.length).toBe(1000 - 611);
    expect(batch.firstRecord).toBe(611);
    expect(reader.skipped.chunks).toBe(1);
    reader.close();
  });

  it.each(['none', 'gzip'])(
    'truncated-%s: exactly 7673 records, then TRUNCATED (never a short read)',
    async (c) => {
      const path = `${GOLDEN_DIR}truncated-${c}-64k.rio`;
      const reader = await RecordIOReader.open(path);
      expect(reader.numRecords).toBe(8192);
      expect(reader.numChunks).toBe(15);
      const { records, error } = await collect(reader);
      expect(records).toHaveLength(7673);
      expect(records[7672]).toEqual(seqRecord(7672));
      const e = expectRecordIOError(error, 'TRUNCATED');
      expect(e.chunk).toBe(14);
      expect(e.offset).toBe(reader.chunks[14]!.offset);
      expect(e.path).toBe(path);

      await expect(reader.read(0, 8192)).rejects.toMatchObject({ code: 'TRUNCATED', chunk: 14 });
      expect(() => reader.readSync(7000, 1192)).toThrow(RecordIOError);
      // The intact part reads fine.
      expect((await reader.read(0, 7673)).length).toBe(7673);
      reader.close();
    },
  );

  it('truncated in skip mode reports the lost chunk', async () => {
    const reader = await RecordIOReader.open(`${GOLDEN_DIR}truncated-gzip-64k.rio`, {
      onCorruptChunk: 'skip',
    });
    const { records, error } = await collect(reader);
    expect(error).toBeUndefined();
    expect(records).toHaveLength(7673);
    expect(reader.skipped).toMatchObject({ chunks: 1, records: 8192 - 7673 });
    reader.close();
  });

  it.each(['none', 'gzip'])(
    'truncated-%s: tailFault() names the chunk that runs past the end of the file, from its header',
    async (c) => {
      const path = `${GOLDEN_DIR}truncated-${c}-64k.rio`;
      const reader = await RecordIOReader.open(path);
      const last = reader.chunks[14];
      expect(last).toBeDefined();
      const present = reader.fileSize - (last?.offset ?? 0) - 20;
      expect(reader.tailFault()).toMatchObject({
        code: 'TRUNCATED',
        chunk: 14,
        offset: last?.offset,
        path,
        detail: `chunk payload runs past the end of the file (${present} of ${last?.compressedSize} bytes present)`,
      });
      reader.close();
      const intact = await RecordIOReader.open(`${GOLDEN_DIR}seq-${c}-64k.rio`);
      expect(intact.tailFault()).toBeUndefined();
      intact.close();
    },
  );

  it.each([
    ['garbage after the last chunk', Buffer.alloc(40, 0x55), 'BAD_MAGIC'],
    ['a partial header after the last chunk', Buffer.alloc(10, 0x01), 'TRUNCATED'],
  ])('%s: every record first, then the fault (skip mode: counted)', async (_name, tail, code) => {
    const path = join(scratch, `tail-${code}.rio`);
    writeFileSync(path, Buffer.concat([readFileSync(`${GOLDEN_DIR}seq-gzip-64k.rio`), tail]));
    const reader = await RecordIOReader.open(path);
    expect([reader.numChunks, reader.numRecords]).toEqual([15, 8192]);
    expect(reader.tailFault()).toMatchObject({ code, chunk: 15, offset: 44527, path });
    const { records, error } = await collect(reader);
    expect(records).toHaveLength(8192);
    const e = expectRecordIOError(error, code);
    expect(e.chunk).toBe(15);
    expect(e.offset).toBe(44527);
    reader.close();

    const skipping = await RecordIOReader.open(path, { onCorruptChunk: 'skip' });
    const skipped = await collect(skipping);
    expect(skipped.error).toBeUndefined();
    expect(skipped.records).toHaveLength(8192);
    expect(skipping.skipped).toMatchObject({ chunks: 1, records: 0 });
    skipping.close();
  });

  it('a damaged header fails at open with BAD_MAGIC', async () => {
    const path = join(scratch, 'bad-magic.rio');
    const bytes = readFileSync(`${GOLDEN_DIR}hello-none.rio`);
    bytes[0] = 0xee;
    writeFileSync(path, bytes);
    const error = await RecordIOReader.open(path).catch((e: unknown) => e);
    const e = expectRecordIOError(error, 'BAD_MAGIC');
    expect(e.message).toContain(path);
    expect(e.stack!.split('\n')[1]).toContain('corrupt.test.ts');
  });

  it('an unknown compressor id fails the read with UNKNOWN_COMPRESSOR', async () => {
    const path = join(scratch, 'unknown-compressor.rio');
    const bytes = readFileSync(`${GOLDEN_DIR}hello-none.rio`);
    bytes.writeUInt32LE(7, 8);
    writeFileSync(path, bytes);
    const outcome = await RecordIOReader.open(path).then(
      async (reader) => {
        expect(reader.chunks[0]!.compressor).toBe(7);
        const error = await reader.read(0, 3).catch((e: unknown) => e);
        reader.close();
        return error;
      },
      (e: unknown) => e,
    );
    expectRecordIOError(outcome, 'UNKNOWN_COMPRESSOR');
  });

  it('a corrupt gzip payload with a matching CRC fails with BAD_COMPRESSION', async () => {
    const path = join(scratch, 'bad-gzip.rio');
    const bytes = readFileSync(`${GOLDEN_DIR}hello-gzip.rio`);
    // Damage the deflate stream, then fix the chunk CRC so only decompression can notice.
    bytes[20 + 12] = (bytes[20 + 12] as number) ^ 0xff;
    const { crc32 } = await import('node:zlib');
    bytes.writeUInt32LE(crc32(bytes.subarray(20)) >>> 0, 4);
    writeFileSync(path, bytes);
    const reader = await RecordIOReader.open(path);
    const error = await reader.read(0, 3).catch((e: unknown) => e);
    expect(expectRecordIOError(error, 'BAD_COMPRESSION').chunk).toBe(0);
    reader.close();
  });

  it('a missing file fails with IO naming it', async () => {
    const path = join(scratch, 'does-not-exist.rio');
    const error = await RecordIOReader.open(path).catch((e: unknown) => e);
    const e = expectRecordIOError(error, 'IO');
    expect(e.message).toContain(path);
  });

  it('ranges outside the file fail with OUT_OF_RANGE; a closed reader with CLOSED', async () => {
    const path = join(scratch, 'hello.rio');
    copyFileSync(`${GOLDEN_DIR}hello-snappy.rio`, path);
    const reader = await RecordIOReader.open(path);
    await expect(reader.read(2, 2)).rejects.toMatchObject({
      code: 'OUT_OF_RANGE',
      message: `OUT_OF_RANGE: ${path}: records [2, 4) are outside the file's 3 records`,
    });
    expect(() => reader.records(4)).toThrow(/OUT_OF_RANGE/);
    expect((await reader.read(3, 0)).length).toBe(0);
    reader.close();
    reader.close();
    expect(reader.closed).toBe(true);
    await expect(reader.read(0, 1)).rejects.toMatchObject({ code: 'CLOSED' });
  });
});
