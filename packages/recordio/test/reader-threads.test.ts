import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { type CompressorName, RecordIOWriter } from '../src/index.js';

const scratch = mkdtempSync(join(tmpdir(), 'edl-recordio-threads-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));
const dist = fileURLToPath(new URL('../dist/index.js', import.meta.url));

async function writeFile(compressor: CompressorName): Promise<string> {
  const path = join(scratch, `threads-${compressor}.rio`);
  const writer = await RecordIOWriter.create(path, { compressor, maxChunkBytes: 64 * 1024 });
  for (let i = 0; i < 5000; i++) writer.write(new TextEncoder().encode(`record ${i} `.repeat(8)));
  writer.close();
  return path;
}

/**
 * In a process whose libuv pool has one thread, kept busy by a long pbkdf2: which comes first,
 * the first batch of `batches()` or the pbkdf2 callback?
 */
function firstBatchVersusBusyPool(path: string): string[] {
  const script = `
    import { pbkdf2 } from 'node:crypto';
    import { RecordIOReader } from ${JSON.stringify(dist)};
    const reader = RecordIOReader.openSync(${JSON.stringify(path)});
    const order = [];
    const poolFree = new Promise((resolve) => pbkdf2('x', 'y', 400000, 32, 'sha256', () => { order.push('pool'); resolve(); }));
    const batches = reader.batches(0, reader.numRecords)[Symbol.asyncIterator]();
    const first = await batches.next();
    order.push('batch ' + first.value.length);
    await poolFree;
    await batches.return();
    reader.close();
    console.log(JSON.stringify(order));
  `;
  const result = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    encoding: 'utf8',
    env: { ...process.env, UV_THREADPOOL_SIZE: '1' },
  });
  expect(result.stderr).toBe('');
  return JSON.parse(result.stdout) as string[];
}

describe('where batches() reads', () => {
  it('reads the first batch of stored chunks on the calling thread, compressed ones on the libuv pool', async () => {
    // Stored chunks: a copy and a checksum, done at once without waiting for the busy pool.
    expect(firstBatchVersusBusyPool(await writeFile('none'))).toEqual(['batch 5000', 'pool']);
    // Decompression stays off the event loop: the batch waits for the pool.
    expect(firstBatchVersusBusyPool(await writeFile('gzip'))).toEqual(['pool', 'batch 5000']);
  }, 30_000);
});
