import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { TableDataReader, TextDataReader } from '@edl/data';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPostgres, type TestPostgres } from '../../data/test/setup/postgres.js';
import {
  CENSUS_COLUMNS,
  CIFAR10_RECORD_BYTES,
  generateCensusCsv,
  generateCifar10Like,
  loadCensusTable,
  synthesizeCensusRows,
} from '../src/index.js';
import { readAll } from './helpers/read-all.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'edl-zoo-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('generateCifar10Like', () => {
  it('writes the same bytes for the same seed and other bytes for another seed', async () => {
    const a = await generateCifar10Like({ dir: path.join(dir, 'a'), records: 50, files: 2, seed: 7 });
    const b = await generateCifar10Like({ dir: path.join(dir, 'b'), records: 50, files: 2, seed: 7 });
    const c = await generateCifar10Like({ dir: path.join(dir, 'c'), records: 50, files: 2, seed: 8 });
    expect(a.files.map((f) => f.records)).toEqual([25, 25]);
    for (const [i, file] of a.files.entries()) {
      expect(readFileSync(file.path).equals(readFileSync(b.files[i]?.path as string))).toBe(true);
      expect(readFileSync(file.path).equals(readFileSync(c.files[i]?.path as string))).toBe(false);
    }
  });

  it('writes labelled 32x32x3 records whose class shows in the colours', async () => {
    const { files, records } = await generateCifar10Like({
      dir: path.join(dir, 'd'),
      records: 400,
      files: 3,
      seed: 3,
    });
    expect(records).toBe(400);
    const all = (await Promise.all(files.map((f) => readAll(f.path)))).flat();
    expect(all).toHaveLength(400);
    const sums = Array.from({ length: 10 }, () => ({ n: 0, rgb: [0, 0, 0] }));
    for (const record of all) {
      expect(record.length).toBe(CIFAR10_RECORD_BYTES);
      const label = record[0] as number;
      expect(label).toBeGreaterThanOrEqual(0);
      expect(label).toBeLessThan(10);
      const entry = sums[label] as { n: number; rgb: number[] };
      entry.n++;
      for (let j = 1; j < record.length; j++)
        entry.rgb[(j - 1) % 3] = (entry.rgb[(j - 1) % 3] as number) + (record[j] as number);
    }
    expect(sums.every((s) => s.n > 15)).toBe(true);
    // Class 0 is red, class 1 green, class 2 blue on average.
    const mean = (label: number) => (sums[label] as { rgb: number[] }).rgb;
    expect(mean(0)[0]).toBeGreaterThan((mean(0)[2] as number) * 1.5);
    expect(mean(1)[1]).toBeGreaterThan((mean(1)[0] as number) * 1.5);
    expect(mean(2)[2]).toBeGreaterThan((mean(2)[1] as number) * 1.5);
  });

  it('rejects bad options with the standard message', async () => {
    await expect(generateCifar10Like({ dir, records: 0 })).rejects.toThrow(
      new RangeError('Expected a positive integer for options.records but received 0'),
    );
  });
});

describe('census generators', () => {
  it('writes a deterministic CSV that the text reader reads back', async () => {
    const first = await generateCensusCsv({ file: path.join(dir, 'census-1.csv'), rows: 300, seed: 5 });
    const second = await generateCensusCsv({ file: path.join(dir, 'census-2.csv'), rows: 300, seed: 5 });
    expect(readFileSync(first).equals(readFileSync(second))).toBe(true);
    const reader = await TextDataReader.open({
      path: first,
      header: true,
      format: 'csv',
      recordsPerShard: 100,
    });
    const shards = await reader.createShards();
    expect(shards.reduce((n, s) => n + s.count, 0)).toBe(300);
    expect(reader.metadata.columns?.map((c) => c.name)).toEqual(CENSUS_COLUMNS);
    const rows = [...synthesizeCensusRows(300, 5)];
    let i = 0;
    for (const shard of shards) {
      for await (const fields of reader.readRecords({
        shardName: shard.name,
        start: shard.start,
        end: shard.start + shard.count,
      })) {
        const row = rows[i++] as unknown as Record<string, unknown>;
        expect(fields).toEqual(CENSUS_COLUMNS.map((c) => String(row[c])));
      }
    }
    expect(i).toBe(300);
    const positives = rows.filter((r) => r.income_over_50k === 1).length;
    expect(positives).toBeGreaterThan(30);
    expect(positives).toBeLessThan(270);
  });

  describe('loadCensusTable (real PostgreSQL)', () => {
    let server: TestPostgres;
    beforeAll(async () => {
      server = await startPostgres();
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
    });

    it('loads the rows that the table reader then reads', async () => {
      const count = await loadCensusTable({
        connectionString: server.connectionString,
        table: 'census',
        rows: 2500,
        seed: 9,
      });
      expect(count).toBe(2500);
      const client = new pg.Client({ connectionString: server.connectionString });
      await client.connect();
      const { rows } = await client.query('SELECT * FROM census ORDER BY id LIMIT 3 OFFSET 1000');
      await client.end();
      const expected = [...synthesizeCensusRows(1003, 9)].slice(1000);
      expect(rows.map(({ id: _id, ...rest }) => rest)).toEqual(expected);
      const reader = await TableDataReader.open({
        connection: server.connectionString,
        table: 'census',
        keyColumn: 'id',
        recordsPerShard: 1000,
      });
      const shards = await reader.createShards();
      expect(shards.map((s) => s.count)).toEqual([1000, 1000, 500]);
      const last = shards[2] as { name: string; start: number; count: number };
      const tail = [];
      for await (const row of reader.readRecords({
        shardName: last.name,
        start: last.start,
        end: last.start + 2,
      }))
        tail.push(row);
      expect(tail.map((r) => r.age)).toEqual(
        [...synthesizeCensusRows(2002, 9)].slice(2000).map((r) => r.age),
      );
      await reader.close();
    });
  });
});
