import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CompressorName, RecordIOWriter } from '../src/index.js';
import { streamSha256 } from './helpers/golden.js';
import { decodePlain, decodePlainRecords } from './helpers/plain-decoder.js';
import { mulberry32, randomRecords } from './helpers/random-records.js';

// The writer must not be checked only by its own reader: these files are decoded by plain JavaScript
// (node:zlib, a JS snappy block decoder and a JS CRC-32C), which checks every CRC along the way.
const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-indep-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

async function writeFile(
  name: string,
  compressor: CompressorName,
  records: Uint8Array[],
  maxChunkBytes: number,
) {
  const path = join(scratch, name);
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes });
  writer.writeBatch(records);
  writer.close();
  return readFileSync(path);
}

describe('files we write, decoded by an independent plain-JS decoder', () => {
  it.each(['none', 'snappy', 'gzip'] as const)('%s', async (compressor) => {
    const records = randomRecords(99, 300);
    const file = await writeFile(`indep-${compressor}.rio`, compressor, records, 300_000);
    const chunks = decodePlain(file);
    expect(chunks.length).toBeGreaterThan(1);
    expect(chunks.every((c) => c.compressor === ['none', 'snappy', 'gzip'].indexOf(compressor))).toBe(true);
    expect(streamSha256(chunks.flatMap((c) => c.records))).toBe(streamSha256(records));
  });

  it('snappy chunks are proper frames of up to 64 KiB, compressed where it pays', async () => {
    const text = Array.from({ length: 5000 }, (_, i) =>
      Buffer.from(`line ${i % 97} of some text `.repeat(3)),
    );
    const chunks = decodePlain(await writeFile('frames.rio', 'snappy', text, 1 << 20));
    const frames = chunks[0]!.frames!;
    expect(frames.maxUncompressed).toBe(65536);
    expect(frames.compressed).toBeGreaterThan(0);
    // Far fewer frames than records: not one frame per record as the Go writer does.
    expect(frames.compressed + frames.stored).toBeLessThan(text.length / 10);
    expect(decodePlainRecords(readFileSync(join(scratch, 'frames.rio')))).toHaveLength(5000);
  });

  it('incompressible snappy data is stored, not expanded', async () => {
    const rand = mulberry32(5);
    const noise = Array.from({ length: 60 }, () =>
      Uint8Array.from({ length: 3000 }, () => Math.floor(rand() * 256)),
    );
    const file = await writeFile('noise.rio', 'snappy', noise, 1 << 20);
    const frames = decodePlain(file)[0]!.frames!;
    expect(frames.stored).toBeGreaterThan(0);
    expect(file.length).toBeLessThan(60 * 3004 * 1.01 + 100);
  });
});
