import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deflateSync, gzipSync } from 'node:zlib';
import { afterAll, describe, expect, it } from 'vitest';
import { TFRecordError, TFRecordReader, TFRecordWriter } from '../src/index.js';
import { maskedCrc32c } from './helpers/crc32c.js';
import { randomRecords } from './helpers/random-records.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-tfrecord-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** TFRecord framing written here with the test's own CRC-32C, independent of the addon. */
function frame(records: readonly Uint8Array[]): Uint8Array {
  const total = records.reduce((n, r) => n + 16 + r.length, 0);
  const out = new Uint8Array(total);
  const view = new DataView(out.buffer);
  let at = 0;
  for (const r of records) {
    view.setBigUint64(at, BigInt(r.length), true);
    view.setUint32(at + 8, maskedCrc32c(out.subarray(at, at + 8)), true);
    out.set(r, at + 12);
    view.setUint32(at + 12 + r.length, maskedCrc32c(r), true);
    at += 16 + r.length;
  }
  return out;
}

async function readAll(reader: TFRecordReader, start = 0, count?: number): Promise<Uint8Array[]> {
  const out: Uint8Array[] = [];
  for await (const r of reader.records(start, count)) out.push(r.slice());
  return out;
}

// Big records are few: vitest's deep equality is slow on large arrays, so equality is checked as
// Buffers (expectSame).
const records = randomRecords(1301, 300).map((r, i) => (i % 50 === 7 ? r : r.subarray(0, 3000)));

function expectSame(got: readonly Uint8Array[], want: readonly Uint8Array[]): void {
  expect(got.length).toBe(want.length);
  const bad = got.findIndex((r, i) => !Buffer.from(r).equals(Buffer.from(want[i] as Uint8Array)));
  expect(bad).toBe(-1);
}

describe('TFRecordWriter -> TFRecordReader', () => {
  it.each(['none', 'gzip', 'zlib'] as const)('%s: round trip, auto-detected', async (compression) => {
    const path = join(scratch, `rt-${compression}.tfrecord`);
    const writer = TFRecordWriter.create(path, { compression });
    for (const r of records.slice(0, 100)) writer.write(r);
    const rest = records.slice(100);
    const data = new Uint8Array(rest.reduce((n, r) => n + r.length, 0));
    const bounds = new Uint32Array(2 * rest.length);
    let at = 0;
    rest.forEach((r, i) => {
      data.set(r, at);
      bounds[2 * i] = at;
      at += r.length;
      bounds[2 * i + 1] = at;
    });
    writer.writeBatch(data, bounds);
    await writer.close();
    expect(writer.recordsWritten).toBe(300);

    const reader = await TFRecordReader.open(path, { batchBytes: 100_000 });
    expect(reader.compression).toBe(compression);
    expect(reader.numRecords).toBe(300);
    expect(reader.tailFault()).toBeUndefined();
    expectSame(await readAll(reader), records);
    expectSame(await readAll(reader, 123, 50), records.slice(123, 173));
    reader.close();
  });

  it('uncompressed output is byte-identical to an independent framing', async () => {
    const path = join(scratch, 'bytes.tfrecord');
    const writer = TFRecordWriter.create(path);
    for (const r of records) writer.write(r);
    writer.write('text record');
    await writer.close();
    const expected = frame([...records, new TextEncoder().encode('text record')]);
    expect(Buffer.from(readFileSync(path)).equals(Buffer.from(expected))).toBe(true);
  });

  it('random access, readSync, get and offsets on an uncompressed file', async () => {
    const path = join(scratch, 'random.tfrecord');
    writeFileSync(path, frame(records));
    const reader = await TFRecordReader.open(path, { compression: 'none' });
    expect(reader.seekable).toBe(true);
    expect(reader.recordOffset(0)).toBe(0);
    expect(reader.recordOffset(1)).toBe(16 + (records[0] as Uint8Array).length);
    expect(reader.recordOffset(300)).toBe(readFileSync(path).length);
    expect(reader.getSync(7)).toEqual(records[7]);
    expect(await reader.get(299)).toEqual(records[299]);
    const batch = reader.readSync(10, 20);
    expect(batch.firstRecord).toBe(10);
    expectSame(
      [...batch].map((r) => r.slice()),
      records.slice(10, 30),
    );
    batch.release();
    // The released buffer is reused by the next read, which still returns the right records.
    expectSame(
      [...(await reader.read(40, 5))].map((r) => r.slice()),
      records.slice(40, 45),
    );
    expect(() => reader.readSync(299, 2)).toThrow(
      new RangeError('Expected an integer in [0, 1] for count but received 2'),
    );
    reader.close();
    expect(() => reader.readSync(0, 1)).toThrow(TFRecordError);
  });

  it('compressed files refuse random access with NOT_SEEKABLE', async () => {
    const path = join(scratch, 'seek.tfrecord.gz');
    writeFileSync(path, gzipSync(frame(records.slice(0, 10))));
    const reader = await TFRecordReader.open(path);
    expect(reader.compression).toBe('gzip');
    expect(reader.seekable).toBe(false);
    expect(() => reader.readSync(0, 1)).toThrow(/^NOT_SEEKABLE: .*seek\.tfrecord\.gz: .*gzip-compressed/);
    expectSame(await readAll(reader, 3, 4), records.slice(3, 7));
  });

  it('detects zlib streams written by another implementation', async () => {
    const path = join(scratch, 'other.zz');
    writeFileSync(path, deflateSync(frame(records.slice(0, 5))));
    const reader = await TFRecordReader.open(path);
    expect(reader.compression).toBe('zlib');
    expectSame(await readAll(reader), records.slice(0, 5));
  });

  it('an empty file has no records', async () => {
    const path = join(scratch, 'empty.tfrecord');
    writeFileSync(path, new Uint8Array(0));
    const reader = await TFRecordReader.open(path);
    expect(reader.numRecords).toBe(0);
    expectSame(await readAll(reader), []);
  });
});

describe('damaged TFRecord files', () => {
  const good = frame(records.slice(0, 20));
  const offset5 = records.slice(0, 5).reduce((n, r) => n + 16 + r.length, 0);

  it('a bad data CRC: the records before it, then CHECKSUM naming record, offset and file', async () => {
    const bytes = good.slice();
    bytes[offset5 + 12] = (bytes[offset5 + 12] as number) ^ 0xff; // first data byte of record 5
    const path = join(scratch, 'bad-data.tfrecord');
    writeFileSync(path, bytes);
    const reader = await TFRecordReader.open(path);
    expect(reader.numRecords).toBe(20); // headers are sound
    const got: Uint8Array[] = [];
    const error = await (async () => {
      for await (const r of reader.records()) got.push(r.slice());
    })().catch((e: unknown) => e);
    expectSame(got, records.slice(0, 5));
    expect(error).toBeInstanceOf(TFRecordError);
    expect((error as TFRecordError).code).toBe('CHECKSUM');
    expect((error as TFRecordError).record).toBe(5);
    expect((error as TFRecordError).offset).toBe(offset5);
    expect((error as Error).message).toBe(
      `CHECKSUM: record 5 at byte ${offset5} of ${path}: record data CRC mismatch`,
    );
    expect(() => reader.readSync(0, 10)).toThrow(/^CHECKSUM: record 5 at byte/);
    expect(reader.getSync(4)).toEqual(records[4]);
  });

  it('a bad length CRC ends the index there: tailFault names it', async () => {
    const bytes = good.slice();
    bytes[offset5 + 9] = (bytes[offset5 + 9] as number) ^ 1;
    const path = join(scratch, 'bad-header.tfrecord');
    writeFileSync(path, bytes);
    const reader = await TFRecordReader.open(path);
    expect(reader.numRecords).toBe(5);
    expect(reader.tailFault()?.message).toBe(
      `CHECKSUM: record 5 at byte ${offset5} of ${path}: record header length CRC mismatch (not a TFRecord file, or corrupt; a compressed file cannot be indexed)`,
    );
    expectSame(await readAll(reader), records.slice(0, 5));
  });

  it('truncation inside a record: TRUNCATED at the cut record', async () => {
    const path = join(scratch, 'cut.tfrecord');
    writeFileSync(path, good.subarray(0, offset5 + 20));
    const reader = await TFRecordReader.open(path);
    expect(reader.numRecords).toBe(5);
    expect(reader.tailFault()?.code).toBe('TRUNCATED');
    expect(reader.tailFault()?.offset).toBe(offset5);
  });

  it('a truncated gzip stream: the records before the cut, then TRUNCATED', async () => {
    const gz = gzipSync(frame(records.slice(0, 20)), { level: 0 });
    const path = join(scratch, 'cut.tfrecord.gz');
    writeFileSync(path, gz.subarray(0, Math.floor(gz.length / 2)));
    const reader = await TFRecordReader.open(path);
    expect(reader.numRecords).toBeGreaterThan(0);
    expect(reader.numRecords).toBeLessThan(20);
    expect(reader.tailFault()?.code).toBe('TRUNCATED');
    expect(reader.tailFault()?.message).toMatch(/of the decompressed stream of .*cut\.tfrecord\.gz/);
    expectSame(await readAll(reader, 0, reader.numRecords), records.slice(0, reader.numRecords));
  });

  it('garbage is refused at open with BAD_COMPRESSION', async () => {
    const path = join(scratch, 'garbage.tfrecord');
    writeFileSync(path, new TextEncoder().encode('this is not a TFRecord file at all'));
    await expect(TFRecordReader.open(path)).rejects.toThrow(
      `BAD_COMPRESSION: at byte 0 of ${path}: neither a TFRecord record header nor a gzip or zlib stream at the start of the file`,
    );
    await expect(TFRecordReader.open(join(scratch, 'missing.tfrecord'))).rejects.toThrow(
      /^IO: .*missing\.tfrecord: cannot open/,
    );
  });
});
