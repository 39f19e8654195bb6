import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CompressorName, type RecordBatch, RecordIOReader, RecordIOWriter } from '../src/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-release-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Record i: its index as text, then up to 3 KiB of pseudo-random (incompressible) bytes. */
function record(i: number): Uint8Array {
  const head = new TextEncoder().encode(`record ${i};`);
  const out = new Uint8Array(head.length + ((i * 37) % 3000));
  out.set(head);
  let x = i + 1;
  for (let k = head.length; k < out.length; k++) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    out[k] = x >>> 24;
  }
  return out;
}

const RECORDS = 3000;

async function writeFile(compressor: CompressorName): Promise<string> {
  const path = join(scratch, `release-${compressor}.rio`);
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 256 * 1024 });
  for (let i = 0; i < RECORDS; i++) writer.write(record(i));
  writer.close();
  return path;
}

function expectRecords(batch: { length: number; firstRecord: number; get(i: number): Uint8Array }): void {
  for (let i = 0; i < batch.length; i++) {
    expect(Buffer.from(batch.get(i)).equals(Buffer.from(record(batch.firstRecord + i)))).toBe(true);
  }
}

describe.each(['none', 'snappy', 'gzip'] as const)('RecordBatch.release() (%s)', (compressor) => {
  it('readSync decodes into the buffers of a released batch, and the records stay right', async () => {
    const path = await writeFile(compressor);
    using reader = RecordIOReader.openSync(path, { batchBytes: 512 * 1024 });
    const first = reader.readSync(0, 1000);
    expectRecords(first);
    const firstBuffer = first.data.buffer;
    const firstBounds = first.bounds.buffer;
    first.release();
    expect(first.released).toBe(true);
    expect(first.length).toBe(0);
    expect(first.data.length).toBe(0);
    expect(() => first.get(0)).toThrow(RangeError);
    first.release(); // idempotent

    // Records 1000.. are about as large as 0..1000: they fit in the released buffers.
    const second = reader.readSync(1000, 1000);
    expect(second.data.buffer).toBe(firstBuffer);
    // Bounds of 1000 records (8 KB) are too small to be worth keeping: malloc serves them.
    expect(second.bounds.buffer).not.toBe(firstBounds);
    expectRecords(second);

    // A batch that outgrows the handed-back buffer still comes out whole, in new memory.
    second.release();
    const all = reader.readSync(0, RECORDS);
    expect(all.length).toBe(RECORDS);
    expectRecords(all);
  });

  it('a batch kept (not released) is never overwritten by later reads', async () => {
    const path = await writeFile(compressor);
    using reader = RecordIOReader.openSync(path);
    const kept = reader.readSync(0, 500);
    const released = reader.readSync(500, 500);
    released.release();
    for (let k = 0; k < 4; k++) reader.readSync(1000 + 400 * k, 400).release();
    expectRecords(kept);
  });

  it('batches() reuses released buffers for its read-ahead and delivers every record', async () => {
    const path = await writeFile(compressor);
    await using reader = await RecordIOReader.open(path, { batchBytes: 256 * 1024 });
    const buffers = new Set<ArrayBufferLike>();
    let next = 0;
    let batches = 0;
    for await (const batch of reader.batches()) {
      expect(batch.firstRecord).toBe(next);
      expectRecords(batch);
      next += batch.length;
      batches++;
      buffers.add(batch.data.buffer);
      batch.release();
    }
    expect(next).toBe(RECORDS);
    // One batch being consumed and one read ahead: far fewer distinct buffers than batches.
    expect(batches).toBeGreaterThan(8);
    expect(buffers.size).toBeLessThan(batches / 2);
  });

  it('batches() of consecutive ranges that cut chunks decode each chunk once and keep every record right', async () => {
    const path = await writeFile(compressor);
    await using reader = await RecordIOReader.open(path, { batchBytes: 256 * 1024 });
    const chunk = reader.chunks[1];
    if (chunk === undefined) throw new Error('expected several chunks');
    // Task-like ranges whose ends fall inside chunks.
    const cuts = [
      0,
      chunk.firstRecord + 7,
      chunk.firstRecord + 9,
      chunk.firstRecord + chunk.numRecords + 100,
      RECORDS,
    ];
    const kept: { first: number; records: Uint8Array[] }[] = [];
    let previous: RecordBatch | undefined;
    for (let k = 0; k + 1 < cuts.length; k++) {
      const start = cuts[k] as number;
      let next = start;
      for await (const batch of reader.batches(start, (cuts[k + 1] as number) - start)) {
        expect(batch.firstRecord).toBe(next);
        expectRecords(batch);
        next += batch.length;
        // Each batch is released once the next one is read: the records carried over to the next
        // range share the buffer of a released batch, and must not be decoded over meanwhile.
        if (previous !== undefined) expectRecords(previous);
        previous?.release();
        previous = batch;
      }
      expect(next).toBe(cuts[k + 1]);
    }
    previous?.release();
    // A range that does not follow on drops the carry; the records are still right.
    for (const [start, count] of [
      [chunk.firstRecord + 3, 10],
      [5, 20],
      [chunk.firstRecord + 13, chunk.numRecords],
    ] as const) {
      const batches = [];
      for await (const batch of reader.batches(start, count)) batches.push(batch);
      expect(batches.reduce((n, b) => n + b.length, 0)).toBe(count);
      for (const batch of batches) {
        kept.push({ first: batch.firstRecord, records: [...batch] });
        expectRecords(batch);
      }
      // Unreleased batches are never overwritten by later reads.
      for await (const batch of reader.batches(0, RECORDS)) batch.release();
      for (const batch of batches) expectRecords(batch);
    }
    for (const { first, records } of kept) {
      records.forEach((r, i) => {
        expect(Buffer.from(r).equals(Buffer.from(record(first + i)))).toBe(true);
      });
    }
  });
});
