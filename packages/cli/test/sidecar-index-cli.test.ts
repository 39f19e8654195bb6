import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeSidecarIndex, RecordIOReader, TFRecordReader } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `edl recordio index` / `edl tfrecord index`, run as users do: build first (`pnpm exec tsc -b packages/cli`).
const root = fileURLToPath(new URL('../../../', import.meta.url));
const edl = join(root, 'packages/cli/dist/bin/edl.js');
const golden = join(root, 'packages/recordio/test/golden');
const goldenTFRecord = join(root, 'packages/recordio/test/golden-tfrecord');
const scratch = mkdtempSync(join(tmpdir(), 'edl-cli-index-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run \`pnpm exec tsc -b packages/cli\` first`);
});

function run(args: string[]): SpawnSyncReturns<Buffer> {
  return spawnSync(process.execPath, [edl, ...args], { env: { ...process.env, EDL_DEBUG: '' } });
}

describe('edl <recordio|tfrecord> index', () => {
  it('writes FILE.idx listing the chunks of a RecordIO file', async () => {
    const file = join(scratch, 'hello.rio');
    copyFileSync(join(golden, 'hello-gzip.rio'), file);
    const result = run(['recordio', 'index', file, '--json']);
    expect(result.stderr.toString()).toBe('');
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout.toString()) as {
      output: string;
      records: number;
      blocks: number;
    };
    expect(report.output).toBe(`${file}.idx`);
    const index = decodeSidecarIndex(readFileSync(`${file}.idx`), 'recordio', `${file}.idx`);
    const reader = await RecordIOReader.open(file);
    expect(index.chunks).toEqual(reader.chunks);
    expect(report).toMatchObject({ records: reader.numRecords, blocks: reader.numChunks });
    reader.close();
  });

  it('writes the index of an uncompressed TFRecord file to --output, and refuses a compressed one', async () => {
    const output = join(scratch, 'examples.idx');
    const file = join(goldenTFRecord, 'examples.tfrecord');
    const result = run(['tfrecord', 'index', file, '--output', output]);
    expect(result.status).toBe(0);
    expect(result.stdout.toString()).toMatch(
      new RegExp(`^wrote ${output}: 24 records, 1 blocks, \\d+ bytes\\n$`),
    );
    const index = decodeSidecarIndex(readFileSync(output), 'tfrecord', output);
    const reader = await TFRecordReader.open(file);
    expect(index.blocks[0]?.offset).toBe(reader.recordOffset(0));
    expect(index.numRecords).toBe(reader.numRecords);
    reader.close();
    const compressed = run([
      'tfrecord',
      'index',
      join(goldenTFRecord, 'examples.tfrecord.gz'),
      '--output',
      output,
    ]);
    expect(compressed.status).toBe(1);
    expect(compressed.stderr.toString()).toMatch(/^edl tfrecord: NOT_SEEKABLE: .*examples\.tfrecord\.gz/);
  });

  it('needs --output for a remote FILE (exit status 2)', () => {
    const result = run(['recordio', 'index', 's3://bucket/data/a.rio']);
    expect(result.status).toBe(2);
    expect(result.stderr.toString()).toContain('a remote FILE needs --output PATH');
  });
});
