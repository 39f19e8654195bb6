import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { TFRecordError, TFRecordReader, TFRecordWriter } from '../src/index.js';

const GOLDEN = join(import.meta.dirname, 'golden-tfrecord');
const scratch = mkdtempSync(join(tmpdir(), 'edl-tfrecord-golden-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Debian's python3 (python3-protobuf lives there), else whatever python3 is on PATH. */
const PYTHON = existsSync('/usr/bin/python3') ? '/usr/bin/python3' : 'python3';

interface ManifestEntry {
  readonly name: string;
  readonly sha256: string;
  readonly records: number;
}

const manifest: ManifestEntry[] = readFileSync(join(GOLDEN, 'MANIFEST.txt'), 'utf8')
  .split('\n')
  .filter((line) => line !== '' && !line.startsWith('#'))
  .map((line) => {
    const [name, sha256, records] = line.split(/\s{2,}/);
    return { name: name as string, sha256: sha256 as string, records: Number(records) };
  });

async function readAll(path: string): Promise<{ records: Buffer[]; error: unknown }> {
  const reader = await TFRecordReader.open(path);
  const records: Buffer[] = [];
  let error: unknown;
  try {
    for await (const r of reader.records()) records.push(Buffer.from(r));
  } catch (e) {
    error = e;
  }
  const tail = reader.tailFault();
  reader.close();
  return { records, error: error ?? tail };
}

describe('golden TFRecord files (written by python3-protobuf + Python zlib/gzip)', () => {
  it('the committed files are what the independent writer produces today', () => {
    execFileSync(PYTHON, [join(GOLDEN, 'make_golden.py'), scratch], { stdio: 'pipe' });
    const names = readdirSync(GOLDEN).filter((n) => n !== 'make_golden.py' && n !== 'README.md');
    expect(names.sort()).toEqual(readdirSync(scratch).sort());
    for (const name of names) {
      expect(readFileSync(join(scratch, name)).equals(readFileSync(join(GOLDEN, name))), name).toBe(true);
    }
  });

  it.each(manifest)('$name: $records readable records', async ({ name, records }) => {
    const { records: got, error } = await readAll(join(GOLDEN, name));
    expect(got).toHaveLength(records);
    if (name.startsWith('bad-data-crc')) {
      expect(error).toBeInstanceOf(TFRecordError);
      expect((error as Error).message).toBe(
        `CHECKSUM: record 3 at byte 378 of ${join(GOLDEN, name)}: record data CRC mismatch`,
      );
    } else if (name.startsWith('truncated')) {
      expect((error as TFRecordError).code).toBe('TRUNCATED');
      expect((error as TFRecordError).offset).toBe(615);
    } else {
      expect(error).toBeUndefined();
    }
  });

  it('compressed and uncompressed goldens hold the same records; our writer reproduces them', async () => {
    const plain = (await readAll(join(GOLDEN, 'examples.tfrecord'))).records;
    expect((await readAll(join(GOLDEN, 'examples.tfrecord.gz'))).records).toEqual(plain);
    expect((await readAll(join(GOLDEN, 'examples.tfrecord.zz'))).records).toEqual(plain);
    const path = join(scratch, 'ours.tfrecord');
    const writer = TFRecordWriter.create(path);
    for (const r of plain) writer.write(r);
    await writer.close();
    expect(readFileSync(path).equals(readFileSync(join(GOLDEN, 'examples.tfrecord')))).toBe(true);
    // Our gzip output is a different byte stream (another deflate), but Python's reader-equivalent
    // (our reader, checked above against Python's files) reads it back the same.
    const gz = join(scratch, 'ours.tfrecord.gz');
    const w2 = TFRecordWriter.create(gz, { compression: 'gzip' });
    for (const r of plain) w2.write(r);
    await w2.close();
    expect((await readAll(gz)).records).toEqual(plain);
    const check = execFileSync(
      PYTHON,
      ['-c', 'import gzip,sys; d=gzip.open(sys.argv[1]).read(); print(len(d))', gz],
      { encoding: 'utf8' },
    );
    expect(Number(check.trim())).toBe(readFileSync(join(GOLDEN, 'examples.tfrecord')).length);
  });
});
