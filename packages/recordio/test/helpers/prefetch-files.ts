import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type CompressorName, RecordIOReader, RecordIOWriter } from '../../src/index.js';
import { mulberry32 } from './random-records.js';

/** A generated file and the records written to it. */
export interface TestFile {
  readonly path: string;
  readonly records: readonly Uint8Array[];
}

/** Writes `count` records of 0..maxLen bytes ("<i>:" + text) in small chunks. */
export async function writeTestFile(
  name: string,
  compressor: CompressorName,
  count: number,
  maxLen: number,
  seed: number,
  maxChunkBytes = 8 * 1024,
): Promise<TestFile> {
  const dir = mkdtempSync(join(tmpdir(), 'edl-prefetch-'));
  const path = join(dir, name);
  const rand = mulberry32(seed);
  const records: Uint8Array[] = [];
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes });
  for (let i = 0; i < count; i++) {
    const text = `${i}:${'abcdefgh'.repeat(64).slice(0, Math.floor(rand() * (maxLen + 1)))}`;
    const record = new TextEncoder().encode(text);
    records.push(record);
    writer.write(record);
  }
  writer.close();
  return { path, records };
}

/** Records [start, start + count) of `path` read sequentially by RecordIOReader.read. */
export async function sequential(path: string, start: number, count: number): Promise<Uint8Array[]> {
  await using reader = await RecordIOReader.open(path);
  const batch = await reader.read(start, count);
  return [...batch];
}
