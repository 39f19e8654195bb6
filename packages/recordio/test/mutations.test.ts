import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { RecordIOError, RecordIOReader } from '../src/index.js';
import { GOLDEN_DIR, seqRecord } from './helpers/golden.js';
import { mulberry32 } from './helpers/random-records.js';

// Seeded damage to real files: every outcome must be a clean RecordIOError (never a crash, a hang
// or another kind of error), every record delivered before it must be the original record at that
// index, and a read that ends without an error must have delivered the original stream.
const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-mutations-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

interface Outcome {
  readonly delivered: number;
  readonly error: RecordIOError | undefined;
}

async function readDamaged(path: string): Promise<Outcome> {
  let reader: RecordIOReader;
  try {
    reader = await RecordIOReader.open(path);
  } catch (error) {
    expect(error).toBeInstanceOf(RecordIOError);
    return { delivered: 0, error: error as RecordIOError };
  }
  let delivered = 0;
  try {
    for await (const record of reader.records()) {
      // Record i of the seq set, byte for byte.
      if (!seqRecord(delivered).equals(record))
        throw new Error(`record ${delivered} differs from the original`);
      delivered++;
    }
    return { delivered, error: undefined };
  } catch (error) {
    if (!(error instanceof RecordIOError)) throw error;
    return { delivered, error };
  } finally {
    reader.close();
  }
}

describe.each(['none', 'snappy', 'gzip'])('damaged seq-%s-64k.rio', (compressor) => {
  const original = readFileSync(`${GOLDEN_DIR}seq-${compressor}-64k.rio`);

  it('single-byte flips anywhere: a clean error naming the file, never wrong records', async () => {
    const rand = mulberry32(1000 + original.length);
    const path = join(scratch, `flip-${compressor}.rio`);
    const codes = new Set<string>();
    for (let k = 0; k < 60; k++) {
      const bytes = Buffer.from(original);
      const at = Math.floor(rand() * bytes.length);
      bytes[at] = (bytes[at] as number) ^ (1 << Math.floor(rand() * 8));
      writeFileSync(path, bytes);
      const { delivered, error } = await readDamaged(path);
      // Every byte is covered by a header check or the payload CRC: a flip is always noticed.
      expect(error, `flip at byte ${at} went unnoticed`).toBeDefined();
      expect(delivered).toBeLessThan(8192);
      codes.add(error!.code);
      expect(error!.message).toContain(path);
    }
    expect(
      [...codes].every((c) =>
        ['CHECKSUM', 'BAD_MAGIC', 'TRUNCATED', 'BAD_COMPRESSION', 'UNKNOWN_COMPRESSOR'].includes(c),
      ),
    ).toBe(true);
  });

  it('truncation at any length: the records of the whole chunks before the cut, then TRUNCATED', async () => {
    const rand = mulberry32(2000 + original.length);
    const path = join(scratch, `cut-${compressor}.rio`);
    const full = await RecordIOReader.open(`${GOLDEN_DIR}seq-${compressor}-64k.rio`);
    const chunks = full.chunks;
    full.close();
    for (let k = 0; k < 40; k++) {
      const length = Math.floor(rand() * original.length);
      writeFileSync(path, original.subarray(0, length));
      const { delivered, error } = await readDamaged(path);
      const whole = chunks.filter((c) => c.offset + 20 + c.compressedSize <= length);
      const expected = whole.reduce((n, c) => n + c.numRecords, 0);
      expect(delivered).toBe(expected);
      const atBoundary = chunks.some((c) => c.offset === length) || length === 0;
      if (atBoundary) expect(error).toBeUndefined();
      else expect(error?.code).toBe('TRUNCATED');
    }
  });
});
