import { type SpawnSyncReturns, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// These tests run the built `edl` as users do: build first (`pnpm run build`, or
// `pnpm exec tsc -b packages/cli`).
const root = fileURLToPath(new URL('../../../', import.meta.url));
const edl = join(root, 'packages/cli/dist/bin/edl.js');
const golden = join(root, 'packages/recordio/test/golden');
const scratch = mkdtempSync(join(tmpdir(), 'edl-cli-recordio-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

beforeAll(() => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run \`pnpm exec tsc -b packages/cli\` first`);
});

function run(args: string[], input?: string | Buffer): SpawnSyncReturns<Buffer> {
  return spawnSync(process.execPath, [edl, 'recordio', ...args], {
    input: input ?? '',
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, EDL_DEBUG: '' },
  });
}

function streamSha256(records: Buffer[]): string {
  const hash = createHash('sha256');
  for (const r of records) {
    const prefix = Buffer.alloc(4);
    prefix.writeUInt32LE(r.length);
    hash.update(prefix).update(r);
  }
  return hash.digest('hex');
}

function lines(out: Buffer): string[] {
  const text = out.toString('utf8');
  expect(text.endsWith('\n') || text === '').toBe(true);
  return text === '' ? [] : text.slice(0, -1).split('\n');
}

function expectOneLineError(result: SpawnSyncReturns<Buffer>, status: number, prefix: string) {
  expect(result.status).toBe(status);
  const stderr = result.stderr.toString();
  expect(stderr.startsWith(prefix)).toBe(true);
  expect(stderr).not.toMatch(/^\s+at /m);
  if (status === 1) expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  else expect(stderr.split('\n')[1]).toBe('Usage: edl recordio <inspect|cat|write|index> ...');
}

const SEQ_SHA = '9ebc5c161a86cd86331671eee603ff24bdc222651dd8cef94201364641631631';

describe('edl recordio inspect', () => {
  it('prints chunks, records, compressors and sizes', () => {
    const result = run(['inspect', join(golden, 'seq-gzip-64k.rio')]);
    expect(result.status).toBe(0);
    const text = result.stdout.toString();
    expect(text).toContain('records   8192\n');
    expect(text).toContain('chunks    15 (gzip: 15)\n');
    expect(text).toContain('size      44527 bytes\n');
    const table = text.split('\n\n')[1]!.trimEnd().split('\n');
    expect(table[0]!.trim().split(/ +/)).toEqual([
      'chunk',
      'offset',
      'compressor',
      'stored',
      'records',
      'first',
    ]);
    expect(table).toHaveLength(16);
    expect(table[1]!.trim().split(/ +/)).toEqual(['0', '0', 'gzip', '3323', '611', '0']);
    expect(table[2]!.trim().split(/ +/)).toEqual(['1', '3343', 'gzip', '3142', '576', '611']);
  });

  it('--json', () => {
    const result = run(['inspect', '--json', join(golden, 'seq-snappy-64k.rio')]);
    expect(result.status).toBe(0);
    const report = JSON.parse(result.stdout.toString());
    expect(report).toMatchObject({
      fileSize: 320367,
      numRecords: 8192,
      numChunks: 15,
      compressors: { snappy: 15 },
    });
    expect(report.chunks).toHaveLength(15);
    expect(report.chunks[0]).toEqual({
      index: 0,
      offset: 0,
      compressor: 'snappy',
      compressedSize: report.chunks[1].offset - 20,
      numRecords: 611,
      firstRecord: 0,
    });
    expect(report.payloadBytes + 15 * 20).toBe(320367);
  });

  it('an empty file', () => {
    const report = JSON.parse(run(['inspect', '--json', join(golden, 'empty-file.rio')]).stdout.toString());
    expect(report).toMatchObject({ numRecords: 0, numChunks: 0, chunks: [] });
  });
});

describe('edl recordio inspect on damaged files', () => {
  it('reports a damaged header after the last good chunk and exits 1', () => {
    const path = join(scratch, 'tail.rio');
    writeFileSync(path, Buffer.concat([readFileSync(join(golden, 'hello-none.rio')), Buffer.alloc(25, 7)]));
    const result = run(['inspect', path]);
    expect(result.stdout.toString()).toContain('records   3\n');
    expect(result.stdout.toString()).toContain(`damaged   BAD_MAGIC: chunk 1 at byte 52 of ${path}: `);
    expectOneLineError(
      result,
      1,
      `edl recordio: the chunk index stops early: BAD_MAGIC: chunk 1 at byte 52 of ${path}`,
    );
    const json = JSON.parse(run(['inspect', '--json', path]).stdout.toString());
    expect(json.damage).toMatchObject({ code: 'BAD_MAGIC', offset: 52 });
    expect(
      JSON.parse(run(['inspect', '--json', join(golden, 'hello-none.rio')]).stdout.toString()).damage,
    ).toBeNull();
  });

  it.each(['truncated-gzip-64k.rio', 'truncated-none-64k.rio'])(
    'reports a chunk that runs past the end of the file as truncated, with its offset, and exits 1 (%s)',
    (name) => {
      const path = join(golden, name);
      const size = statSync(path).size;
      const result = run(['inspect', path]);
      const json = JSON.parse(run(['inspect', '--json', path]).stdout.toString());
      const last = json.chunks[14];
      const present = size - last.offset - 20;
      expect(last.compressedSize).toBeGreaterThan(present);
      const message = `TRUNCATED: chunk 14 at byte ${last.offset} of ${path}: chunk payload runs past the end of the file (${present} of ${last.compressedSize} bytes present)`;
      expectOneLineError(result, 1, `edl recordio: ${message}`);
      expect(result.stdout.toString()).toContain(`damaged   ${message}\n`);
      expect(result.stdout.toString()).toMatch(
        new RegExp(
          `\\n +14 +${last.offset} +\\S+ +${last.compressedSize} .*TRUNCATED: ${present} bytes in the file\\n`,
        ),
      );
      expect(json.damage).toEqual({ code: 'TRUNCATED', chunk: 14, offset: last.offset, message });
      // Only the bytes the file holds count as stored payload.
      expect(json.payloadBytes).toBe(size - 20 * json.numChunks);
    },
  );

  it('a file cut inside its only chunk, and one cut after its last header', () => {
    const whole = readFileSync(join(golden, 'hello-snappy.rio'));
    const cut = join(scratch, 'cut.rio');
    writeFileSync(cut, whole.subarray(0, whole.length - 1));
    const result = run(['inspect', '--json', cut]);
    expect(result.status).toBe(1);
    expect(JSON.parse(result.stdout.toString()).damage).toMatchObject({
      code: 'TRUNCATED',
      chunk: 0,
      offset: 0,
    });
    const headerOnly = join(scratch, 'header-only.rio');
    writeFileSync(headerOnly, whole.subarray(0, 20));
    expect(JSON.parse(run(['inspect', '--json', headerOnly]).stdout.toString())).toMatchObject({
      payloadBytes: 0,
      damage: { code: 'TRUNCATED', chunk: 0 },
    });
    expect(run(['inspect', join(golden, 'hello-snappy.rio')]).status).toBe(0);
  });

  it('headers only: a bad CRC inside a chunk is not seen by inspect', () => {
    expect(run(['inspect', join(golden, 'bad-crc-none-64k.rio')]).status).toBe(0);
  });

  it('--verify decodes every chunk and lists the damaged ones', () => {
    const path = join(golden, 'bad-crc-none-64k.rio');
    const result = run(['inspect', '--verify', path]);
    expect(result.stdout.toString()).toContain(
      `verified  7581 of 8192 records decoded; 1 damaged chunk(s):\n  CHECKSUM: chunk 0 at byte 0 of ${path}: `,
    );
    expect(result.stdout.toString()).toContain('(611 records lost)\n');
    expectOneLineError(result, 1, `edl recordio: 1 damaged chunk(s), 611 records lost, in ${path}`);
    const json = JSON.parse(
      run(['inspect', '--verify', '--json', join(golden, 'truncated-gzip-64k.rio')]).stdout.toString(),
    );
    expect(json.verified).toMatchObject({
      records: 7673,
      badChunks: [{ chunk: 14, code: 'TRUNCATED', records: 519 }],
    });
    const good = run(['inspect', '--verify', join(golden, 'seq-gzip-64k.rio')]);
    expect(good.status).toBe(0);
    expect(good.stdout.toString()).toContain('verified  8192 records decoded, every chunk intact\n');
  });
});

describe('edl recordio cat', () => {
  it('raw: the bytes then a newline', () => {
    const result = run(['cat', join(golden, 'hello-gzip.rio')]);
    expect(result.status).toBe(0);
    expect(result.stdout.toString()).toBe('Hello\nWorld,\nRecordIO!\n');
  });

  it('hex and base64: exactly one line per record, an empty line for an empty record', () => {
    expect(run(['cat', '--format', 'hex', join(golden, 'empty-records-snappy.rio')]).stdout.toString()).toBe(
      '\n\n\n',
    );
    expect(run(['cat', '--format=base64', join(golden, 'hello-none.rio')]).stdout.toString()).toBe(
      'SGVsbG8=\nV29ybGQs\nUmVjb3JkSU8h\n',
    );
    for (const format of ['hex', 'base64'] as const) {
      const result = run(['cat', '--format', format, join(golden, 'seq-snappy-64k.rio')]);
      expect(result.status).toBe(0);
      const records = lines(result.stdout).map((l) => Buffer.from(l, format));
      expect(records).toHaveLength(8192);
      expect(streamSha256(records)).toBe(SEQ_SHA);
    }
  });

  it('--start and --count (count clamped to the end of the file)', () => {
    const result = run(['cat', join(golden, 'seq-none-64k.rio'), '--start', '24', '--count', '2']);
    expect(result.stdout.toString()).toBe(`${'record-24'.repeat(1)}\n${'record-25'.repeat(2)}\n`);
    const tail = run(['cat', join(golden, 'hello-none.rio'), '--start', '2', '--count', '10']);
    expect(tail.stdout.toString()).toBe('RecordIO!\n');
    expect(tail.status).toBe(0);
  });

  it('--start past the end is an error naming the range', () => {
    const path = join(golden, 'hello-none.rio');
    expectOneLineError(
      run(['cat', path, '--start', '4']),
      1,
      `edl recordio: OUT_OF_RANGE: ${path}: records [4, 4) are outside the file's 3 records`,
    );
    expect(run(['cat', path, '--start', '3']).status).toBe(0);
  });

  it('jsonl: text when UTF-8, base64 otherwise', () => {
    const result = run(['cat', '--format', 'jsonl', '--count', '2', join(golden, 'hello-snappy.rio')]);
    expect(lines(result.stdout).map((l) => JSON.parse(l))).toEqual([
      { index: 0, length: 5, text: 'Hello' },
      { index: 1, length: 6, text: 'World,' },
    ]);
    const bin = join(scratch, 'bin.rio');
    expect(run(['write', bin, '--format', 'hex'], 'ff00\n').status).toBe(0);
    expect(JSON.parse(run(['cat', '--format', 'jsonl', bin]).stdout.toString())).toEqual({
      index: 0,
      length: 2,
      base64: '/wA=',
    });
  });

  it('bad CRC: nothing before the fault, then exit 1 with a one-line error', () => {
    const path = join(golden, 'bad-crc-none-64k.rio');
    const result = run(['cat', '--format', 'hex', path]);
    expect(result.stdout.length).toBe(0);
    expectOneLineError(result, 1, `edl recordio: CHECKSUM: chunk 0 at byte 0 of ${path}: `);
  });

  it.each(['none', 'gzip'])('truncated %s: the 7673 records before the fault, then exit 1', (c) => {
    const path = join(golden, `truncated-${c}-64k.rio`);
    const result = run(['cat', '--format', 'base64', path]);
    const records = lines(result.stdout).map((l) => Buffer.from(l, 'base64'));
    expect(records).toHaveLength(7673);
    expect(records[7672]!.toString()).toBe('record-7672'.repeat(7672 % 23));
    expectOneLineError(result, 1, 'edl recordio: TRUNCATED: chunk 14 at byte ');
  });

  it('a missing file: exit 1, one line', () => {
    const path = join(scratch, 'missing.rio');
    expectOneLineError(run(['cat', path]), 1, 'edl recordio: IO: ');
  });

  it('a reader that goes away early (| head) is not an error', () => {
    const result = spawnSync(
      'bash',
      [
        '-c',
        `"${process.execPath}" "${edl}" recordio cat --format hex "${join(golden, 'seq-none-64k.rio')}" | head -n 2`,
      ],
      { maxBuffer: 1 << 24 },
    );
    expect(lines(result.stdout)).toHaveLength(2);
    expect(result.stderr.toString()).toBe('');
  });
});

describe('edl recordio write', () => {
  it.each(['none', 'snappy', 'gzip'])('%s: lines from stdin, read back by cat', (compressor) => {
    const out = join(scratch, `lines-${compressor}.rio`);
    const input = `${Array.from({ length: 5000 }, (_, i) => `line ${i}`).join('\n')}\n\nlast without newline`;
    const result = run(['write', out, '--compressor', compressor, '--max-chunk-bytes', '4096'], input);
    expect(result.status).toBe(0);
    expect(result.stderr.toString()).toMatch(new RegExp(`^wrote 5002 records in \\d+ ${compressor} chunks`));
    const report = JSON.parse(run(['inspect', '--json', out]).stdout.toString());
    expect(report.numRecords).toBe(5002);
    expect(report.numChunks).toBeGreaterThan(5);
    expect(report.compressors).toEqual({ [compressor]: report.numChunks });
    expect(run(['cat', out]).stdout.toString()).toBe(`${input}\n`);
  });

  it('hex and base64 input, binary-safe', () => {
    const out = join(scratch, 'hex.rio');
    expect(run(['write', out, '--format', 'hex'], '00ff0a0d\n\nABCD\r\n').status).toBe(0);
    expect(run(['cat', '--format', 'hex', out]).stdout.toString()).toBe('00ff0a0d\n\nabcd\n');
    const out64 = join(scratch, 'b64.rio');
    expect(run(['write', out64, '--format', 'base64'], 'SGVsbG8=\n\n').status).toBe(0);
    expect(run(['cat', out64]).stdout.toString()).toBe('Hello\n\n');
  });

  it('an output that cannot be created: exit 1, one line', () => {
    const out = join(scratch, 'no-such-dir', 'x.rio');
    expectOneLineError(run(['write', out], 'a\n'), 1, `edl recordio: IO: ${out}: `);
  });

  it('empty input writes an empty file', () => {
    const out = join(scratch, 'empty.rio');
    expect(run(['write', out], '').status).toBe(0);
    expect(readFileSync(out).length).toBe(0);
  });

  it('a bad input line: exit 1 naming the line, and no half-written file', () => {
    const out = join(scratch, 'bad.rio');
    const result = run(['write', out, '--format', 'hex'], 'abcd\nxyz\n');
    expectOneLineError(
      result,
      1,
      "edl recordio: line 2: Expected an even number of hex digits but received 'xyz'",
    );
    expect(existsSync(out)).toBe(false);
  });
});

describe('bad arguments: one line, then the usage, exit 2, no stack trace', () => {
  it.each([
    [[], 'edl recordio: missing sub-command (inspect, cat, write or index)'],
    [['dump', 'x'], "edl recordio: unknown sub-command 'dump' (expected inspect, cat, write or index)"],
    [['cat'], 'edl recordio: missing FILE'],
    [['cat', 'a.rio', 'b.rio'], "edl recordio: unexpected argument 'b.rio'"],
    [
      ['cat', 'a.rio', '--start', 'abc'],
      "edl recordio: Expected a non-negative integer for --start but received 'abc'",
    ],
    [
      ['cat', 'a.rio', '--count', '-1'],
      "edl recordio: Expected a non-negative integer for --count but received '-1'",
    ],
    [
      ['cat', 'a.rio', '--format', 'xml'],
      "edl recordio: Expected one of raw, hex, base64, jsonl, example for --format but received 'xml'",
    ],
    [['cat', 'a.rio', '--verbose'], "edl recordio: Unknown option '--verbose'"],
    [['inspect'], 'edl recordio: missing FILE'],
    [['write'], 'edl recordio: missing OUT'],
    [
      ['write', 'o.rio', '--compressor', 'lz4'],
      "edl recordio: Expected one of none, snappy, gzip for --compressor but received 'lz4'",
    ],
    [
      ['write', 'o.rio', '--max-chunk-bytes', '0'],
      "edl recordio: Expected an integer >= 1 for --max-chunk-bytes but received '0'",
    ],
  ])('%j', (args, message) => {
    expectOneLineError(run(args as string[]), 2, message);
  });

  it('--help prints the usage and exits 0', () => {
    const result = run(['cat', '--help']);
    expect(result.status).toBe(0);
    expect(result.stdout.toString()).toContain('edl recordio cat FILE [--start N]');
  });
});
