import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  type ChunkInfo,
  decodeRecordIORange,
  decodeRecordIORangeSync,
  decodeTFRecordRange,
  decodeTFRecordRangeSync,
  type RecordBatch,
  RecordIOError,
  RecordIOReader,
  TFRecordError,
  TFRecordReader,
} from '../src/index.js';
import { GOLDEN_DIR, readManifest, streamSha256 } from './helpers/golden.js';

const TFRECORD_DIR = join(import.meta.dirname, 'golden-tfrecord');
const opened: RecordIOReader[] = [];
afterAll(() => {
  for (const reader of opened) reader.close();
});

function open(path: string, onCorruptChunk: 'error' | 'skip' = 'error'): RecordIOReader {
  const reader = RecordIOReader.openSync(path, { onCorruptChunk });
  opened.push(reader);
  return reader;
}

function records(batch: RecordBatch): Buffer[] {
  return [...batch].map((r) => Buffer.from(r));
}

/** What a call gives: its records (count and stream digest) and first record, or its error. */
async function outcome(run: () => Promise<RecordBatch> | RecordBatch): Promise<{
  records?: number;
  sha256?: string;
  firstRecord?: number;
  error?: string;
}> {
  try {
    const batch = await run();
    return { records: batch.length, sha256: streamSha256(batch), firstRecord: batch.firstRecord };
  } catch (error) {
    if (!(error instanceof RecordIOError)) throw error;
    return { error: error.message };
  }
}

/** Skip mode through the file reader: the records delivered (digest) and the faults' messages. */
function fileSkipRead(path: string, start: number, count: number): { sha256: string; faults: string[] } {
  const reader = open(path, 'skip');
  const batch = reader.readSync(start, count);
  return { sha256: streamSha256(batch), faults: reader.skipped.faults.map((f) => f.message) };
}

/** Skip mode from memory: the same two things, and the batch. */
async function memorySkipRead(
  bytes: Uint8Array,
  chunks: readonly ChunkInfo[] | undefined,
  options: Parameters<typeof decodeRecordIORange>[2],
): Promise<{ batch: RecordBatch; sha256: string; faults: RecordIOError[] }> {
  const faults: RecordIOError[] = [];
  const batch = await decodeRecordIORange(bytes, chunks, {
    ...options,
    onCorruptChunk: 'skip',
    onSkip: (fault) => faults.push(fault),
  });
  return { batch, sha256: streamSha256(batch), faults };
}

describe('decodeRecordIORange: every golden file read whole from memory', () => {
  it.each(readManifest().map((e) => [e.file, e.path] as const))(
    '%s equals the file read',
    async (_name, path) => {
      const bytes = readFileSync(path);
      const reader = open(path);
      const fromFile = await outcome(() => reader.read(0, reader.numRecords));
      for (const chunks of [reader.chunks, undefined]) {
        const options = { source: path };
        expect(await outcome(() => decodeRecordIORange(bytes, chunks, options))).toEqual(fromFile);
        expect(await outcome(() => decodeRecordIORangeSync(bytes, chunks, options))).toEqual(fromFile);
        const skipped = fileSkipRead(path, 0, reader.numRecords);
        const fromMemory = await memorySkipRead(bytes, chunks, options);
        expect(fromMemory.sha256).toBe(skipped.sha256);
        expect(fromMemory.faults.map((f) => f.message)).toEqual(skipped.faults);
      }
    },
  );

  it('names the damaged chunks as the file read does', async () => {
    const path = join(GOLDEN_DIR, 'truncated-gzip-64k.rio');
    const reader = open(path);
    const error = await decodeRecordIORange(readFileSync(path), reader.chunks, { source: path }).catch(
      (e) => e,
    );
    expect(error).toBeInstanceOf(RecordIOError);
    expect(error.code).toBe('TRUNCATED');
    expect(error.chunk).toBe(14);
    expect(error.offset).toBe(reader.chunks[14]?.offset);
    expect(error.message).toMatch(
      /^TRUNCATED: chunk 14 at byte \d+ of .*truncated-gzip-64k\.rio: chunk payload/,
    );
  });
});

describe('decodeRecordIORange: ranges cut at chunk boundaries', () => {
  const cases = ['none', 'snappy', 'gzip'].flatMap((compressor) =>
    [
      [0, 1, 0, undefined],
      [3, 6, 5, 100],
      [6, 15, 0, undefined],
      [14, 15, 10, 7],
    ].map((c) => [compressor, ...c] as [string, number, number, number, number | undefined]),
  );

  it.each(cases)(
    'seq-%s-64k chunks [%i, %i), skip %i, count %s',
    async (compressor, from, to, skip, count) => {
      const path = join(GOLDEN_DIR, `seq-${compressor}-64k.rio`);
      const bytes = readFileSync(path);
      const reader = open(path);
      const chunks = reader.chunks.slice(from, to);
      const first = chunks[0] as ChunkInfo;
      const last = chunks.at(-1) as ChunkInfo;
      const range = bytes.subarray(first.offset, last.offset + 20 + last.compressedSize);
      const total = last.firstRecord + last.numRecords - first.firstRecord;
      const want = await reader.read(first.firstRecord + skip, count ?? total - skip);
      const options = { skip, ...(count === undefined ? {} : { count }) };
      // With the index's chunks, and from the headers alone given where the range lies.
      const located = { baseOffset: first.offset, firstChunk: first.index, firstRecord: first.firstRecord };
      for (const batch of [
        await decodeRecordIORange(range, chunks, options),
        decodeRecordIORangeSync(range, chunks, options),
        await decodeRecordIORange(range, undefined, { ...options, ...located }),
      ]) {
        expect(batch.firstRecord).toBe(want.firstRecord);
        expect(batch.length).toBe(want.length);
        expect(streamSha256(batch)).toBe(streamSha256(want));
      }
    },
  );

  it('delivers the records before a corrupt chunk, and in skip mode the ones after it', async () => {
    const path = join(GOLDEN_DIR, 'bad-crc-none-64k.rio');
    const reader = open(path);
    const bytes = readFileSync(path);
    const chunks = reader.chunks.slice(0, 3);
    const range = bytes.subarray(
      0,
      (chunks[2] as ChunkInfo).offset + 20 + (chunks[2] as ChunkInfo).compressedSize,
    );
    const got = await memorySkipRead(range, chunks, { source: path, skip: 600 });
    const want = fileSkipRead(
      path,
      600,
      611 - 600 + (chunks[1]?.numRecords ?? 0) + (chunks[2]?.numRecords ?? 0),
    );
    expect(got.sha256).toBe(want.sha256);
    expect(got.batch.firstRecord).toBe(611);
    expect(got.faults.map((f) => [f.code, f.chunk, f.records])).toEqual([['CHECKSUM', 0, 11]]);
    await expect(decodeRecordIORange(range, chunks, { source: path })).rejects.toThrow(
      /^CHECKSUM: chunk 0 at byte 0 of .*bad-crc-none-64k\.rio: chunk checksum mismatch/,
    );
  });
});

describe('decodeRecordIORange: buffers that do not hold what the index says', () => {
  const path = join(GOLDEN_DIR, 'seq-snappy-64k.rio');
  const bytes = readFileSync(path);
  const chunks = () => open(path).chunks.slice(2, 5);
  const start = () => (chunks()[0] as ChunkInfo).offset;
  const end = () => {
    const last = chunks().at(-1) as ChunkInfo;
    return last.offset + 20 + last.compressedSize;
  };

  it('a buffer cut inside the last chunk: TRUNCATED for it, the records before delivered', async () => {
    const range = bytes.subarray(start(), end() - 100);
    const last = chunks()[2] as ChunkInfo;
    const error = await decodeRecordIORange(range, chunks()).catch((e) => e);
    expect(error).toBeInstanceOf(RecordIOError);
    expect([error.code, error.chunk, error.offset, error.records]).toEqual([
      'TRUNCATED',
      last.index,
      last.offset,
      last.numRecords,
    ]);
    const skipped = await memorySkipRead(range, chunks(), {});
    const want = await open(path).read(
      (chunks()[0] as ChunkInfo).firstRecord,
      last.firstRecord - (chunks()[0] as ChunkInfo).firstRecord,
    );
    expect(skipped.sha256).toBe(streamSha256(want));
    expect(skipped.faults).toHaveLength(1);
  });

  it('a buffer that ends before chunks the index lists: TRUNCATED naming the first missing one', async () => {
    const missing = chunks()[2] as ChunkInfo;
    const range = bytes.subarray(start(), missing.offset);
    const skipped = await memorySkipRead(range, chunks(), { source: 'https://example.test/x.rio' });
    expect(skipped.batch.length).toBe(missing.firstRecord - (chunks()[0] as ChunkInfo).firstRecord);
    expect(skipped.faults.map((f) => [f.code, f.chunk, f.offset, f.records])).toEqual([
      ['TRUNCATED', missing.index, missing.offset, missing.numRecords],
    ]);
    expect(skipped.faults[0]?.message).toBe(
      `TRUNCATED: chunk ${missing.index} at byte ${missing.offset} of https://example.test/x.rio: ` +
        `the range ends at byte ${missing.offset} after 2 of the 3 chunks its index lists`,
    );
    // An empty buffer for a non-empty index fails the same way, and no records come out.
    const none = await memorySkipRead(new Uint8Array(0), chunks(), {});
    expect(none.batch.length).toBe(0);
    expect(none.faults.map((f) => f.chunk)).toEqual([(chunks()[0] as ChunkInfo).index]);
  });

  it('a header that differs from the index entry is BAD_MAGIC, whatever the mode', async () => {
    const lying = chunks().map((c, i) => (i === 1 ? { ...c, numRecords: c.numRecords + 1 } : c));
    const fixed = lying.map((c, i) => (i === 2 ? { ...c, firstRecord: c.firstRecord + 1 } : c));
    for (const onCorruptChunk of ['error', 'skip'] as const) {
      const error = await decodeRecordIORange(bytes.subarray(start(), end()), fixed, {
        onCorruptChunk,
      }).catch((e) => e);
      expect(error).toBeInstanceOf(RecordIOError);
      expect([error.code, error.chunk, error.offset]).toEqual([
        'BAD_MAGIC',
        fixed[1]?.index,
        fixed[1]?.offset,
      ]);
      expect(error.message).toMatch(/is not the chunk the index lists/);
    }
    // A buffer that does not start at the first chunk's header.
    const shifted = await decodeRecordIORange(bytes.subarray(start() + 4, end()), chunks()).catch((e) => e);
    expect(shifted.code).toBe('BAD_MAGIC');
  });

  it('bounds what it decodes, and what it is asked for', async () => {
    const range = bytes.subarray(start(), end());
    const tooLarge = await decodeRecordIORange(range, chunks(), { maxDecodedBytes: 100_000 }).catch((e) => e);
    expect(tooLarge).toBeInstanceOf(RecordIOError);
    expect(tooLarge.code).toBe('TOO_LARGE');
    expect(tooLarge.message).toMatch(/exceed the limit of 100000 bytes/);
    const total = chunks().reduce((n, c) => n + c.numRecords, 0);
    await expect(decodeRecordIORange(range, chunks(), { skip: 1, count: total })).rejects.toMatchObject({
      code: 'OUT_OF_RANGE',
    });
    const all = await decodeRecordIORange(range, chunks(), { skip: total });
    expect(all.length).toBe(0);
  });

  it("decodes into released batches' buffers and hands them to recycle on release", async () => {
    const range = bytes.subarray(start(), end());
    const expected = records(await decodeRecordIORange(range, chunks()));
    const handedBack: [ArrayBufferLike, ArrayBufferLike][] = [];
    const recycle = (data: ArrayBufferLike, bounds: ArrayBufferLike): void => {
      handedBack.push([data, bounds]);
    };
    const first = await decodeRecordIORange(range, chunks(), { recycle });
    first.release();
    expect(handedBack).toHaveLength(1);
    const [data, bounds] = handedBack[0] as [ArrayBuffer, ArrayBuffer];
    new Uint8Array(data).fill(0xab);
    for (const decode of [decodeRecordIORange, decodeRecordIORangeSync]) {
      const again = await decode(range, chunks(), { reuse: { data, bounds }, recycle });
      // Decoded in place over the scribbled buffers: the same memory, the same records.
      expect(again.data.buffer).toBe(data);
      expect(again.bounds.buffer).toBe(bounds);
      expect(records(again)).toEqual(expected);
    }
    // A buffer too small is outgrown into fresh memory, never overrun.
    const small = new ArrayBuffer(16);
    const grown = await decodeRecordIORange(range, chunks(), { reuse: { data: small } });
    expect(grown.data.buffer).not.toBe(small);
    expect(records(grown)).toEqual(expected);
    await expect(decodeRecordIORange(range, chunks(), { reuse: { data, bounds: data } })).rejects.toThrow(
      /two different ArrayBuffers/,
    );
    await expect(
      decodeRecordIORange(range, chunks(), { reuse: { data: new Uint8Array(4) as never } }),
    ).rejects.toThrow(TypeError);
  });

  it('checks its arguments before the addon sees them', async () => {
    const range = bytes.subarray(start(), end());
    await expect(decodeRecordIORange('x' as unknown as Uint8Array)).rejects.toThrow(TypeError);
    await expect(decodeRecordIORange(range, chunks(), { baseOffset: 0 })).rejects.toThrow(RangeError);
    await expect(decodeRecordIORange(range, [chunks()[0], chunks()[2]] as ChunkInfo[])).rejects.toThrow(
      /chunks follow each other/,
    );
    expect(() => decodeRecordIORangeSync(range, undefined, { bogus: 1 } as never)).toThrow(TypeError);
    await expect(decodeRecordIORange(range, undefined, { maxDecodedBytes: 2 ** 32 })).rejects.toThrow(
      RangeError,
    );
  });
});

/** Byte offset of every frame of an uncompressed TFRecord file, plus the end of the last. */
function frameOffsets(bytes: Buffer, records: number): number[] {
  const offsets = [0];
  for (let i = 0; i < records; i++) {
    const at = offsets[i] as number;
    offsets.push(at + 16 + Number(bytes.readBigUInt64LE(at)));
  }
  return offsets;
}

async function tfrecordFileRead(path: string): Promise<{ records: Buffer[]; error?: string }> {
  const reader = await TFRecordReader.open(path);
  const got: Buffer[] = [];
  try {
    for await (const record of reader.records()) got.push(Buffer.from(record));
  } catch (error) {
    reader.close();
    return { records: got, error: (error as Error).message };
  }
  const tail = reader.tailFault();
  reader.close();
  return tail === undefined ? { records: got } : { records: got, error: tail.message };
}

describe('decodeTFRecordRange', () => {
  const uncompressed = readdirSync(TFRECORD_DIR).filter((n) => n.endsWith('.tfrecord'));

  it.each(uncompressed)('%s read whole from memory equals the file read', async (name) => {
    const path = join(TFRECORD_DIR, name);
    const bytes = readFileSync(path);
    const fromFile = await tfrecordFileRead(path);
    for (const decode of [decodeTFRecordRange, decodeTFRecordRangeSync]) {
      try {
        const batch = await decode(bytes, { source: path });
        expect({ records: records(batch) }).toEqual(fromFile);
        // No copy: the records are views into the bytes handed in.
        if (batch.length > 0) expect(batch.get(0).buffer).toBe(bytes.buffer);
      } catch (error) {
        expect(error).toBeInstanceOf(TFRecordError);
        expect((error as Error).message).toBe(fromFile.error);
      }
    }
  });

  it('decodes ranges cut at frame boundaries, as the file reader reads them', async () => {
    const path = join(TFRECORD_DIR, 'examples.tfrecord');
    const bytes = readFileSync(path);
    const offsets = frameOffsets(bytes, 24);
    const reader = await TFRecordReader.open(path);
    try {
      for (const [from, to] of [
        [0, 1],
        [5, 17],
        [23, 24],
        [3, 3],
      ] as const) {
        const range = bytes.subarray(offsets[from], offsets[to]);
        const batch = await decodeTFRecordRange(range, { baseOffset: offsets[from], firstRecord: from });
        expect(batch.firstRecord).toBe(from);
        expect(records(batch)).toEqual(records(reader.readSync(from, to - from)));
        // `count` takes the first records of a longer range.
        const head = decodeTFRecordRangeSync(bytes.subarray(offsets[from]), { count: to - from });
        expect(records(head)).toEqual(records(batch));
      }
    } finally {
      reader.close();
    }
  });

  it('checks a range of 1 MiB or more on the libuv pool, with the same result', async () => {
    const one = readFileSync(join(TFRECORD_DIR, 'examples.tfrecord'));
    const copies = Math.ceil((1024 * 1024) / one.length) + 1;
    const bytes = Buffer.concat(Array.from({ length: copies }, () => one));
    const onPool = await decodeTFRecordRange(bytes, { firstRecord: 10 });
    const here = decodeTFRecordRangeSync(bytes, { firstRecord: 10 });
    expect(onPool.length).toBe(24 * copies);
    expect(onPool.firstRecord).toBe(10);
    expect(streamSha256(onPool)).toBe(streamSha256(here));
    const cut = bytes.subarray(0, bytes.length - 1);
    await expect(decodeTFRecordRange(cut, { firstRecord: 10 })).rejects.toMatchObject({
      code: 'TRUNCATED',
      record: 10 + 24 * copies - 1,
    });
  });

  it('names the record and file offset of a short or damaged range', async () => {
    const path = join(TFRECORD_DIR, 'examples.tfrecord');
    const bytes = readFileSync(path);
    const offsets = frameOffsets(bytes, 24);
    const base = offsets[4] as number;
    const cut = bytes.subarray(base, (offsets[7] as number) - 3);
    await expect(
      decodeTFRecordRange(cut, { baseOffset: base, firstRecord: 4, source: 's3://b/k' }),
    ).rejects.toThrow(
      `TRUNCATED: record 6 at byte ${offsets[6]} of s3://b/k: file ends inside a record of ${(offsets[7] as number) - (offsets[6] as number) - 16} bytes`,
    );
    const whole = bytes.subarray(base, offsets[7]);
    await expect(decodeTFRecordRange(whole, { baseOffset: base, firstRecord: 4, count: 4 })).rejects.toThrow(
      `TRUNCATED: record 7 at byte ${offsets[7]}: the range ends after 3 of the 4 records asked for`,
    );
    const damaged = Buffer.from(whole);
    const lengthByte = (offsets[5] as number) - base + 3; // inside record 5's length
    damaged[lengthByte] = (damaged[lengthByte] as number) ^ 1;
    await expect(decodeTFRecordRange(damaged, { baseOffset: base, firstRecord: 4 })).rejects.toMatchObject({
      code: 'CHECKSUM',
      record: 5,
      offset: offsets[5],
    });
    await expect(decodeTFRecordRange(whole, { maxRecordSize: 10 })).rejects.toMatchObject({
      code: 'TOO_LARGE',
    });
    const gzip = readFileSync(join(TFRECORD_DIR, 'examples.tfrecord.gz'));
    await expect(decodeTFRecordRange(gzip)).rejects.toMatchObject({ code: 'CHECKSUM', record: 0, offset: 0 });
  });
});
