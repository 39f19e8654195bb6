import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { RecordIOWriter } from '@edl/recordio';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataReader } from '../../src/protocols.js';
import { createDataReader, RecordIODataReader, TextDataReader } from '../../src/readers/index.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'edl-create-'));
  await writeFile(join(dir, 'rows.csv'), 'id,name\n1,"a, b"\n2,c\n3,d\n');
  await writeFile(join(dir, 'rows.tsv'), 'id\tname\n1\tx\n');
  await writeFile(join(dir, 'lines.txt'), 'one\ntwo\nthree\n');
  await writeFile(join(dir, 'lines.dat'), 'one\ntwo\n');
  await mkdir(join(dir, 'rio'));
  for (const [name, count] of [
    ['b.rio', 5],
    ['a.recordio', 3],
  ] as const) {
    const writer = await RecordIOWriter.create(join(dir, 'rio', name), { compressor: 'snappy' });
    for (let i = 0; i < count; i++) writer.write(`${name}:${i}`);
    writer.close();
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function readAll(reader: DataReader<unknown>): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const s of await reader.createShards()) {
    for await (const r of reader.readRecords({ shardName: s.name, start: s.start, end: s.start + s.count })) {
      out.push(r instanceof Uint8Array ? Buffer.from(r).toString() : r);
    }
  }
  return out;
}

/** describe() -> createDataReader -> the same description, shards and records. */
async function expectRoundTrip(reader: DataReader<unknown>): Promise<void> {
  const again = await createDataReader(reader.describe());
  try {
    expect(again.constructor).toBe(reader.constructor);
    expect(again.describe()).toEqual(reader.describe());
    expect(JSON.parse(JSON.stringify(reader.describe()))).toEqual(reader.describe());
    expect(await again.createShards()).toEqual(await reader.createShards());
    expect(await readAll(again)).toEqual(await readAll(reader));
  } finally {
    await again.close?.();
  }
}

describe('createDataReader', () => {
  it('picks the text reader by extension (.csv, .tsv, .txt) and by file: URL', async () => {
    const csv = await createDataReader(join(dir, 'rows.csv'), { header: true, recordsPerShard: 2 });
    expect(csv).toBeInstanceOf(TextDataReader);
    expect(await readAll(csv)).toEqual([
      ['1', 'a, b'],
      ['2', 'c'],
      ['3', 'd'],
    ]);
    await expectRoundTrip(csv);
    const tsv = await createDataReader(pathToFileURL(join(dir, 'rows.tsv')).href, { header: true });
    expect(tsv.metadata.columns?.map((c) => c.name)).toEqual(['id', 'name']);
    expect(await readAll(tsv)).toEqual([['1', 'x']]);
    const txt = await createDataReader(join(dir, 'lines.txt'));
    expect(await readAll(txt)).toEqual(['one', 'two', 'three']);
    await expectRoundTrip(txt);
  });

  it('picks the RecordIO reader for .rio/.recordio files and directories', async () => {
    const file = await createDataReader(join(dir, 'rio', 'b.rio'));
    expect(file).toBeInstanceOf(RecordIODataReader);
    expect(await readAll(file)).toEqual(['b.rio:0', 'b.rio:1', 'b.rio:2', 'b.rio:3', 'b.rio:4']);
    await expectRoundTrip(file);
    const dirReader = await createDataReader(join(dir, 'rio'), { maxOpenFiles: 1 });
    expect(dirReader.describe()).toEqual({
      type: 'recordio',
      params: { dataDir: join(dir, 'rio'), maxOpenFiles: 1, onCorruptChunk: 'error' },
    });
    expect(await readAll(dirReader)).toEqual([
      'a.recordio:0',
      'a.recordio:1',
      'a.recordio:2',
      'b.rio:0',
      'b.rio:1',
      'b.rio:2',
      'b.rio:3',
      'b.rio:4',
    ]);
    await expectRoundTrip(dirReader);
    await file.close?.();
    await dirReader.close?.();
  });

  it('lets an explicit type win over the extension', async () => {
    const csvAsLines = await createDataReader(join(dir, 'rows.csv'), { type: 'text', format: 'lines' });
    expect(await readAll(csvAsLines)).toEqual(['id,name', '1,"a, b"', '2,c', '3,d']);
    const dat = await createDataReader(join(dir, 'lines.dat'), { type: 'text' });
    expect(await readAll(dat)).toEqual(['one', 'two']);
    const fromParams = await createDataReader(undefined, {
      type: 'recordio',
      files: [join(dir, 'rio', 'a.recordio')],
    });
    expect(await readAll(fromParams)).toEqual(['a.recordio:0', 'a.recordio:1', 'a.recordio:2']);
  });

  it('refuses origins it cannot place and params it does not know', async () => {
    await expect(createDataReader(join(dir, 'lines.dat'))).rejects.toThrow(
      `UNKNOWN_ORIGIN: cannot tell which reader reads "${join(dir, 'lines.dat')}": the extension ".dat" is not known.`,
    );
    await expect(createDataReader('gs://bucket/data.csv')).rejects.toThrow(
      /^UNKNOWN_ORIGIN: cannot tell which reader reads "gs:\/\/bucket\/data.csv": the URL scheme gs: is not supported/,
    );
    // s3: is read through the AWS SDK: with no credentials anywhere, one line that names the object.
    await expect(createDataReader('s3://bucket/data.csv')).rejects.toThrow(
      /ACCESS_DENIED: s3:\/\/bucket\/data.csv: no AWS credentials found/,
    );
    await expect(createDataReader(join(dir, 'missing'))).rejects.toThrow(/no such file or directory/);
    await expect(createDataReader(undefined)).rejects.toMatchObject({ code: 'UNKNOWN_ORIGIN' });
    await expect(createDataReader(join(dir, 'rows.csv'), { recordPerShard: 5 })).rejects.toThrow(
      new TypeError(
        'Expected one of path, format, header, delimiter, recordsPerShard, indexStride, columns, inferTypes, remote for a param of a text reader but received "recordPerShard"',
      ),
    );
  });
});
