import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RecordIOReader, RecordIOWriter } from '../src/index.js';
import { GOLDEN_DIR } from './helpers/golden.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-args-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const hello = `${GOLDEN_DIR}hello-none.rio`;

// Bad arguments are caught in TypeScript, before the addon, with one message format.
describe('argument validation', () => {
  it('RecordIOReader.open', async () => {
    await expect(RecordIOReader.open(42 as unknown as string)).rejects.toThrow(
      new TypeError('Expected a non-empty string for path but received 42'),
    );
    await expect(RecordIOReader.open('')).rejects.toThrow(
      new TypeError('Expected a non-empty string for path but received ""'),
    );
    await expect(RecordIOReader.open(hello, { onCorruptChunk: 'ignore' as 'skip' })).rejects.toThrow(
      new RangeError("Expected one of 'error', 'skip' for options.onCorruptChunk but received \"ignore\""),
    );
    await expect(RecordIOReader.open(hello, { onCorrupt: 'skip' } as never)).rejects.toThrow(
      new TypeError(
        'Expected one of onCorruptChunk, batchBytes, chunkCacheBytes for a key of options but received "onCorrupt"',
      ),
    );
    await expect(RecordIOReader.open(hello, { batchBytes: 0 })).rejects.toThrow(
      new RangeError('Expected an integer in [1, 2147483648] for options.batchBytes but received 0'),
    );
    await expect(RecordIOReader.open(hello, null as never)).rejects.toThrow(
      new TypeError('Expected an object for options but received null'),
    );
  });

  it('read / records', async () => {
    const reader = await RecordIOReader.open(hello);
    await expect(reader.read(-1, 1)).rejects.toThrow(
      new RangeError('Expected a non-negative integer for start but received -1'),
    );
    await expect(reader.read(0, 1.5)).rejects.toThrow(
      new RangeError('Expected a non-negative integer for count but received 1.5'),
    );
    await expect(reader.read('0' as unknown as number, 1)).rejects.toThrow(
      new TypeError('Expected a non-negative integer for start but received "0"'),
    );
    expect(() => reader.records(Number.NaN)).toThrow(
      new RangeError('Expected a non-negative integer for start but received NaN'),
    );
    const batch = await reader.read(0, 3);
    expect(() => batch.get(3)).toThrow(
      new RangeError('Expected an integer in [0, 2] for index but received 3'),
    );
    reader.close();
  });

  it('RecordIOWriter.create and write', async () => {
    const path = join(scratch, 'w.rio');
    await expect(RecordIOWriter.create(path, { compressor: 'lz4' as 'gzip' })).rejects.toThrow(
      new RangeError("Expected one of 'none', 'snappy', 'gzip' for options.compressor but received \"lz4\""),
    );
    await expect(RecordIOWriter.create(path, { maxChunkBytes: 0 })).rejects.toThrow(
      new RangeError('Expected an integer in [1, 4294967295] for options.maxChunkBytes but received 0'),
    );
    await expect(RecordIOWriter.create(path, { gzipLevel: 10 })).rejects.toThrow(
      new RangeError('Expected an integer in [1, 9] for options.gzipLevel but received 10'),
    );
    await expect(RecordIOWriter.create(path, { maxChunkSize: 5 } as never)).rejects.toThrow(
      new TypeError(
        'Expected one of compressor, maxChunkBytes, gzipLevel for a key of options but received "maxChunkSize"',
      ),
    );
    const writer = await RecordIOWriter.create(path);
    expect(() => writer.write(5 as unknown as string)).toThrow(
      new TypeError('Expected a Uint8Array or a string for record but received 5'),
    );
    expect(() => writer.writeBatch(['a', {} as Uint8Array])).toThrow(
      new TypeError('Expected a Uint8Array or a string for records[1] but received {}'),
    );
    expect(() => writer.writeBatch({ data: new Uint8Array(4), bounds: Uint32Array.of(0, 5) })).toThrow(
      new RangeError(
        'Expected offsets within the 4 bytes of data for records.bounds[0..1] but received [0, 5)',
      ),
    );
    expect(() => writer.writeBatch('abc' as never)).toThrow(TypeError);
    writer.close();
    // Nothing invalid reached the file.
    const reader = await RecordIOReader.open(path);
    expect(reader.numRecords).toBe(0);
    reader.close();
  });

  it('a directory that does not exist is an IO error naming the path', async () => {
    const path = join(scratch, 'no', 'such', 'dir.rio');
    await expect(RecordIOWriter.create(path)).rejects.toMatchObject({
      name: 'RecordIOError',
      code: 'IO',
      path,
    });
  });
});
