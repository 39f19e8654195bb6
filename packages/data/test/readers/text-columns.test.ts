import { writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createDataReader, DataReaderError, TextDataReader } from '../../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-text-columns-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

function csv(name: string, text: string): string {
  const file = path.join(dir, name);
  writeFileSync(file, text);
  return file;
}

async function readAll(reader: TextDataReader<'csv'>): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const shard of await reader.createShards()) {
    for await (const r of reader.readRecords({
      shardName: shard.name,
      start: shard.start,
      end: shard.start + shard.count,
    }))
      out.push(r);
  }
  return out;
}

describe('typed CSV columns', () => {
  it('makes numbers of float32 and int32 columns named by the header', async () => {
    const file = csv('typed.csv', 'x,n,label\n1.5,2,cat\n-3e-1,7,dog\n');
    const reader = await TextDataReader.open<'csv'>({
      path: file,
      header: true,
      columns: { x: 'float32', n: 'int32' },
    });
    expect(reader.metadata.columns).toEqual([
      { name: 'x', type: 'float32' },
      { name: 'n', type: 'int32' },
      { name: 'label', type: 'string' },
    ]);
    expect(await readAll(reader)).toEqual([
      [1.5, 2, 'cat'],
      [-0.3, 7, 'dog'],
    ]);
  });

  it('infers float32 for numeric columns and keeps the rest strings, in other processes too', async () => {
    const file = csv('infer.csv', 'a,b,c\n1,x,3\n2.5,y,4\n');
    const reader = await TextDataReader.open<'csv'>({ path: file, header: true, inferTypes: true });
    expect(reader.metadata.columns?.map((c) => c.type)).toEqual(['float32', 'string', 'float32']);
    expect(await readAll(reader)).toEqual([
      [1, 'x', 3],
      [2.5, 'y', 4],
    ]);
    // describe() carries the resolved types: a worker re-creating the reader gets the same records.
    const again = (await createDataReader(file, reader.describe().params)) as TextDataReader<'csv'>;
    expect(await readAll(again)).toEqual(await readAll(reader));
  });

  it('types columns by number without a header, and names the record of a bad value', async () => {
    const file = csv('bad.csv', '1,2\n3,oops\n');
    const reader = await TextDataReader.open<'csv'>({
      path: file,
      columns: { '0': 'int32', '1': 'float32' },
    });
    const error = await readAll(reader).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DataReaderError);
    expect((error as DataReaderError).code).toBe('BAD_VALUE');
    expect((error as Error).message).toContain(`record 1 of ${file}: column 1 is float32 but holds "oops"`);
  });

  it('rejects an unknown type and a column the file lacks', async () => {
    const file = csv('plain.csv', 'a,b\n1,2\n');
    await expect(
      TextDataReader.open({ path: file, header: true, columns: { a: 'float64' as 'float32' } }),
    ).rejects.toThrow(
      "Expected 'float32' | 'int32' | 'string' for options.columns.a but received \"float64\"",
    );
    await expect(
      TextDataReader.open({ path: file, header: true, columns: { z: 'float32' } }),
    ).rejects.toThrow(
      "Expected a column of the file for options.columns but received 'z' (it has columns a, b)",
    );
  });
});

describe('a header row read as data', () => {
  it('warns when the first row is words and the rest numbers, and only then', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const file = csv('header.csv', 'height,weight\n1.8,70\n1.6,55\n');
      await TextDataReader.open({ path: file });
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]?.[0])).toContain(
        `the first row of ${file} looks like a header (height, weight) but the reader's header option is not set`,
      );
      await TextDataReader.open({ path: file, header: true });
      await TextDataReader.open({ path: csv('numbers.csv', '1,2\n3,4\n') });
      await TextDataReader.open({ path: csv('words.csv', 'a,b\nc,d\n') });
      expect(warn).toHaveBeenCalledTimes(1);
    } finally {
      warn.mockRestore();
    }
  });
});
