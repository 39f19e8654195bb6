import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '@edl/common';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataReaderError, TextDataReader } from '../../src/readers/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-text-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const PIECES = [
  '',
  'a',
  'bc',
  ' x ',
  ',',
  ';',
  '"',
  '""',
  '\n',
  '\r\n',
  'é',
  '日本',
  '😀',
  'plain text',
  '\t',
  '|',
];

/** Random CSV text: quoted when needed (and sometimes when not), mixed line endings, empty lines. */
function randomCsv(
  random: () => number,
  records: number,
  delimiter: string,
  trailingNewline: boolean,
): string {
  const lines: string[] = [];
  for (let r = 0; r < records; r++) {
    const fieldCount = 2 + Math.floor(random() * 4);
    const fields: string[] = [];
    for (let f = 0; f < fieldCount; f++) {
      let value = '';
      const parts = Math.floor(random() * 4);
      for (let p = 0; p < parts; p++) value += PIECES[Math.floor(random() * PIECES.length)];
      const needsQuotes = /["\r\n]/.test(value) || value.includes(delimiter);
      fields.push(needsQuotes || random() < 0.1 ? `"${value.replaceAll('"', '""')}"` : value);
    }
    lines.push(fields.join(delimiter));
    if (random() < 0.05) lines.push('');
  }
  let text = '';
  for (const [i, line] of lines.entries()) {
    text += line;
    if (i < lines.length - 1 || trailingNewline) text += random() < 0.3 ? '\r\n' : '\n';
  }
  return text;
}

function referenceParse(text: string, delimiter: string): string[][] {
  return parse(text, {
    delimiter,
    record_delimiter: ['\r\n', '\n'],
    relax_column_count: true,
    skip_empty_lines: true,
    bom: true,
  }) as string[][];
}

async function readAll<T>(reader: TextDataReader, shards?: { name: string; start: number; count: number }[]) {
  const out: T[] = [];
  for (const shard of shards ?? (await reader.createShards())) {
    for await (const record of reader.readRecords({
      shardName: shard.name,
      start: shard.start,
      end: shard.start + shard.count,
    })) {
      out.push(record as T);
    }
  }
  return out;
}

describe('TextDataReader (csv)', () => {
  it.each([
    { seed: 1, delimiter: ',', stride: 1, perShard: 7, trailing: true },
    { seed: 2, delimiter: ';', stride: 3, perShard: 50, trailing: false },
    { seed: 3, delimiter: '\t', stride: 256, perShard: 1000, trailing: true },
    { seed: 4, delimiter: '|', stride: 16, perShard: 1, trailing: false },
  ])('reads every record as csv-parse does (seed $seed, delimiter $delimiter, stride $stride)', async (c) => {
    const text = randomCsv(mulberry32(c.seed), 600, c.delimiter, c.trailing);
    const path = join(dir, `random-${c.seed}.csv`);
    await writeFile(path, text);
    const expected = referenceParse(text, c.delimiter);
    // The data really has the hard cases: newlines, quotes and delimiters inside fields, empty lines.
    const fields = expected.flat();
    for (const hard of ['\n', '\r\n', '"', c.delimiter])
      expect(fields.some((f) => f.includes(hard))).toBe(true);
    expect(text).toMatch(/\n\r?\n/);
    const reader = await TextDataReader.open({
      path,
      delimiter: c.delimiter,
      recordsPerShard: c.perShard,
      indexStride: c.stride,
    });
    const shards = await reader.createShards();
    expect(shards.reduce((n, s) => n + s.count, 0)).toBe(expected.length);
    expect(shards.map((s) => s.start)).toEqual(shards.map((_, i) => i * c.perShard));
    expect(await readAll<string[]>(reader, shards)).toEqual(expected);
    // Sub-ranges of shards, starting anywhere inside an index block.
    const random = mulberry32(c.seed + 100);
    for (let i = 0; i < 30; i++) {
      const shard = shards[Math.floor(random() * shards.length)]!;
      const start = shard.start + Math.floor(random() * shard.count);
      const end = start + Math.floor(random() * (shard.start + shard.count - start + 1));
      const got: string[][] = [];
      for await (const r of reader.readRecords({ shardName: shard.name, start, end }))
        got.push(r as string[]);
      expect(got).toEqual(expected.slice(start, end));
    }
  });

  it('takes column names from the header, which is not a record', async () => {
    const path = join(dir, 'header.csv');
    await writeFile(path, '\ufeffid,"full, name",note\r\n1,"Ann ""A"" Lee","line1\nline2"\r\n2,Bob,\r\n');
    const reader = await TextDataReader.open({ path, header: true });
    expect(reader.metadata.columns).toEqual([
      { name: 'id', type: 'string' },
      { name: 'full, name', type: 'string' },
      { name: 'note', type: 'string' },
    ]);
    expect(await readAll<string[]>(reader)).toEqual([
      ['1', 'Ann "A" Lee', 'line1\nline2'],
      ['2', 'Bob', ''],
    ]);
    expect(reader.describe()).toEqual({
      type: 'text',
      params: { path, format: 'csv', header: true, delimiter: ',', recordsPerShard: 10000, indexStride: 256 },
    });
  });

  it('finds records that cross the read and index buffer boundaries', async () => {
    const random = mulberry32(9);
    const rows: string[][] = [];
    for (let i = 0; i < 400; i++) {
      const size = Math.floor(random() * 40_000);
      rows.push([String(i), 'x'.repeat(size).replace(/x{97}/g, (m) => `${m}\n"`)]);
    }
    const text = rows.map(([a, b]) => `${a},"${b!.replaceAll('"', '""')}"`).join('\n');
    expect(text.length).toBeGreaterThan(3 << 20);
    const path = join(dir, 'large.csv');
    await writeFile(path, text);
    const reader = await TextDataReader.open({ path, recordsPerShard: 37, indexStride: 5 });
    expect(await readAll<string[]>(reader)).toEqual(rows);
  });

  it('rejects malformed quoting with the file and record named', async () => {
    const unterminated = join(dir, 'unterminated.csv');
    await writeFile(unterminated, 'a,b\n1,"open\n2,3\n');
    const reader = await TextDataReader.open({ path: unterminated });
    await expect(reader.createShards()).rejects.toThrow(
      `BAD_CSV: unterminated quoted field (the record starts at byte 4), in record 1 (counting from 0, header included) of ${unterminated}`,
    );
    const stray = join(dir, 'stray.csv');
    await writeFile(stray, 'a,b\n1,x"y\n');
    await expect((await TextDataReader.open({ path: stray })).createShards()).rejects.toMatchObject({
      code: 'BAD_CSV',
      message: expect.stringContaining('a quote inside an unquoted field at byte 7'),
    });
    const after = join(dir, 'after.csv');
    await writeFile(after, '"a"b,c\n');
    await expect((await TextDataReader.open({ path: after })).createShards()).rejects.toThrow(
      /unexpected character after a closing quote at byte 3/,
    );
  });
});

describe('TextDataReader (lines)', () => {
  it('reads lines as strings: CRLF stripped, empty lines kept, last line without newline', async () => {
    const lines = ['first', '', 'third \t with "quotes"', '', 'é😀', 'last'];
    const text = `${lines.slice(0, 3).join('\r\n')}\n${lines.slice(3).join('\n')}`;
    const path = join(dir, 'plain.txt');
    await writeFile(path, text);
    const reader = await TextDataReader.open({ path, recordsPerShard: 4, indexStride: 2 });
    expect(reader.metadata.format).toBe('lines');
    const shards = await reader.createShards();
    expect(shards).toEqual([
      { name: `${path}:0-4`, start: 0, count: 4 },
      { name: `${path}:4-6`, start: 4, count: 2 },
    ]);
    expect(await readAll<string>(reader, shards)).toEqual(lines);
  });

  it('matches split on newlines for random text, with a header line', async () => {
    const random = mulberry32(5);
    const lines: string[] = ['the header'];
    for (let i = 0; i < 3000; i++)
      lines.push(i % 17 === 0 ? '' : `line ${i} ${'z'.repeat(Math.floor(random() * 300))}`);
    const path = join(dir, 'many.txt');
    await writeFile(path, `${lines.join('\n')}\n`);
    const reader = await TextDataReader.open({ path, header: true, recordsPerShard: 333, indexStride: 64 });
    expect(reader.metadata.columns).toEqual([{ name: 'the header', type: 'string' }]);
    expect(await reader.recordCount()).toBe(3000);
    expect(await readAll<string>(reader)).toEqual(lines.slice(1));
  });
});

describe('TextDataReader errors', () => {
  it('checks options and ranges', async () => {
    const path = join(dir, 'small.txt');
    await writeFile(path, 'a\nb\nc\n');
    await expect(TextDataReader.open({ path, delimiter: '"' })).rejects.toThrow(
      new TypeError(
        `Expected one ASCII character other than a quote, CR or LF for options.delimiter but received "\\""`,
      ),
    );
    await expect(TextDataReader.open({ path, recordsPerShard: 0 })).rejects.toThrow(RangeError);
    await expect(TextDataReader.open({ path: join(dir, 'missing.txt') })).rejects.toMatchObject({
      code: 'IO',
    });
    const reader = await TextDataReader.open({ path, recordsPerShard: 2 });
    const drain = async (range: { shardName: string; start: number; end: number }) => {
      for await (const _ of reader.readRecords(range)) {
        // drain
      }
    };
    await expect(drain({ shardName: 'elsewhere:0-2', start: 0, end: 2 })).rejects.toMatchObject({
      code: 'UNKNOWN_SHARD',
    });
    await expect(drain({ shardName: `${path}:0-2`, start: 1, end: 3 })).rejects.toThrow(
      `OUT_OF_RANGE: records [1, 3) lie outside shard ${path}:0-2`,
    );
    await expect(drain({ shardName: `${path}:2-9`, start: 2, end: 9 })).rejects.toThrow(DataReaderError);
  });

  it('refuses a file that changed after it was indexed', async () => {
    const path = join(dir, 'changing.txt');
    await writeFile(path, 'a\nb\nc\n');
    const reader = await TextDataReader.open({ path });
    const [shard] = await reader.createShards();
    await writeFile(path, 'a\n');
    const read = async () => {
      for await (const _ of reader.readRecords({ shardName: shard!.name, start: 0, end: 3 })) {
        // drain
      }
    };
    await expect(read()).rejects.toMatchObject({ code: 'FILE_CHANGED' });
  });
});
