import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// These tests run the built `edl` as users do: build first (`pnpm exec tsc -b packages/cli`).
const root = fileURLToPath(new URL('../../../', import.meta.url));
const edl = join(root, 'packages/cli/dist/bin/edl.js');
const golden = join(root, 'packages/recordio/test/golden-tfrecord');
const scratch = mkdtempSync(join(tmpdir(), 'edl-cli-tfrecord-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run \`pnpm exec tsc -b packages/cli\` first`);
});

function run(args: string[]): SpawnSyncReturns<Buffer> {
  return spawnSync(process.execPath, [edl, ...args], {
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, EDL_DEBUG: '' },
  });
}

function lines(out: Buffer): string[] {
  const text = out.toString('utf8');
  return text === '' ? [] : text.slice(0, -1).split('\n');
}

/** protobuf's own proto3 JSON of the golden Examples (python json_format). */
const expectedJson = readFileSync(join(golden, 'examples.jsonl'), 'utf8')
  .trim()
  .split('\n')
  .map((l) => JSON.parse(l) as unknown);

describe('edl tfrecord inspect', () => {
  it.each(['examples.tfrecord', 'examples.tfrecord.gz', 'examples.tfrecord.zz'])(
    '%s: --json has "records": 24',
    (name) => {
      const result = run(['tfrecord', 'inspect', join(golden, name), '--json']);
      expect(result.stderr.toString()).toBe('');
      expect(result.status).toBe(0);
      const report = JSON.parse(result.stdout.toString()) as Record<string, unknown>;
      expect(report.records).toBe(24);
      expect(report.compression).toBe(name.endsWith('.gz') ? 'gzip' : name.endsWith('.zz') ? 'zlib' : 'none');
      expect(report.damage).toBeNull();
    },
  );

  it('a truncated file: prints what is readable, names the damage, exit 1', () => {
    const path = join(golden, 'truncated.tfrecord');
    const result = run(['tfrecord', 'inspect', path]);
    expect(result.status).toBe(1);
    expect(result.stdout.toString()).toMatch(/^records +5$/m);
    expect(result.stderr.toString()).toMatch(
      /^edl tfrecord: TRUNCATED: record 5 at byte 615 of .*truncated\.tfrecord: file ends inside a record of \d+ bytes\n$/,
    );
  });

  it('--verify finds a bad data CRC', () => {
    const path = join(golden, 'bad-data-crc.tfrecord');
    expect(run(['tfrecord', 'inspect', path]).status).toBe(0); // the headers are sound
    const result = run(['tfrecord', 'inspect', path, '--verify', '--json']);
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout.toString()).records).toBe(3);
    expect(result.stderr.toString()).toBe(
      `edl tfrecord: CHECKSUM: record 3 at byte 378 of ${path}: record data CRC mismatch\n`,
    );
  });
});

describe('edl tfrecord cat', () => {
  it.each(['examples.tfrecord', 'examples.tfrecord.gz', 'examples.tfrecord.zz'])(
    '%s --format example prints protobuf JSON, one line per record',
    (name) => {
      const result = run(['tfrecord', 'cat', join(golden, name), '--format', 'example']);
      expect(result.status).toBe(0);
      expect(lines(result.stdout).map((l) => JSON.parse(l))).toEqual(expectedJson);
    },
  );

  it('--start/--count/--format hex and explicit --compression', () => {
    const result = run([
      'tfrecord',
      'cat',
      join(golden, 'empty-records.tfrecord'),
      '--format',
      'hex',
      '--start',
      '1',
    ]);
    expect(lines(result.stdout)).toEqual(['61', '']);
    const gz = run([
      'tfrecord',
      'cat',
      join(golden, 'examples.tfrecord.gz'),
      '--compression',
      'gzip',
      '--start',
      '20',
      '--count',
      '2',
      '--format',
      'example',
    ]);
    expect(lines(gz.stdout).map((l) => JSON.parse(l))).toEqual(expectedJson.slice(20, 22));
  });

  it('a damaged file: every record before the fault, then one line and exit 1', () => {
    const path = join(golden, 'bad-data-crc.tfrecord');
    const result = run(['tfrecord', 'cat', path, '--format', 'example']);
    expect(result.status).toBe(1);
    expect(lines(result.stdout).map((l) => JSON.parse(l))).toEqual(expectedJson.slice(0, 3));
    expect(result.stderr.toString()).toBe(
      `edl tfrecord: CHECKSUM: record 3 at byte 378 of ${path}: record data CRC mismatch\n`,
    );
  });

  it('bad arguments: exit 2 with one line and the usage', () => {
    const result = run(['tfrecord', 'cat', join(golden, 'examples.tfrecord'), '--compression', 'lz4']);
    expect(result.status).toBe(2);
    const [first, second] = result.stderr.toString().split('\n');
    expect(first).toBe(
      "edl tfrecord: Expected one of auto, none, gzip, zlib for --compression but received 'lz4'",
    );
    expect(second).toBe('Usage: edl tfrecord <inspect|cat|index> ...');
    const wrong = run(['tfrecord', 'cat', join(golden, 'examples.tfrecord.gz'), '--compression', 'none']);
    expect(wrong.status).toBe(1);
    expect(wrong.stderr.toString()).toMatch(
      /^edl tfrecord: CHECKSUM: record 0 at byte 0 of .*: record header length CRC mismatch/,
    );
  });

  it('a record that is not an Example: the records before it, then exit 1 naming it', () => {
    const result = run(['tfrecord', 'cat', join(golden, 'empty-records.tfrecord'), '--format', 'example']);
    expect(result.status).toBe(1);
    expect(lines(result.stdout)).toEqual(['{}']);
    expect(result.stderr.toString()).toMatch(
      /^edl tfrecord: record 1 is not a tf\.train\.Example: .* \(in .*empty-records\.tfrecord\)\n$/,
    );
  });
});

describe('edl recordio cat --format example', () => {
  it('prints the Examples of a RecordIO file (ElasticDL data) in proto3 JSON', async () => {
    const records = readFileSync(join(golden, 'examples.tfrecord'));
    const path = join(scratch, 'examples.rio');
    const writer = await RecordIOWriter.create(path, { compressor: 'snappy' });
    for (let at = 0; at < records.length; ) {
      const length = Number(records.readBigUInt64LE(at));
      writer.write(records.subarray(at + 12, at + 12 + length));
      at += 16 + length;
    }
    writer.close();
    const result = run(['recordio', 'cat', path, '--format', 'example']);
    expect(result.status).toBe(0);
    expect(lines(result.stdout).map((l) => JSON.parse(l))).toEqual(expectedJson);
  });
});
