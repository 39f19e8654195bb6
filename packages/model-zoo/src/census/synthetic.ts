import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { checkInteger, checkNonEmptyString, SeededRandom } from '@edl/common';
import { loadPg } from '@edl/data/readers';
import { CENSUS_CATEGORICAL, CENSUS_COLUMNS, type CensusRow } from './schema.js';

/**
 * Census-like rows, deterministic from `seed`. Income depends on education, hours, age, capital
 * gain, marital status and work class through a logistic model plus noise, so a small network can
 * learn it (about 80% accuracy is reachable) but not perfectly.
 */
export function* synthesizeCensusRows(count: number, seed = 1): Generator<CensusRow> {
  checkInteger(count, 'count', 0);
  const random = new SeededRandom(checkInteger(seed, 'seed', 0));
  const [workclass, marital, sex] = CENSUS_CATEGORICAL;
  for (let i = 0; i < count; i++) {
    const age = 18 + random.int(60);
    const educationNum = 1 + random.int(16);
    const hours = Math.max(5, Math.min(90, Math.round(40 + random.normal() * 12)));
    const capitalGain = random.next() < 0.1 ? Math.round(random.next() * 20_000) : 0;
    const w = workclass.values[random.int(workclass.values.length)] as string;
    const m = marital.values[random.int(marital.values.length)] as string;
    const s = sex.values[random.int(sex.values.length)] as string;
    const score =
      -7 +
      0.35 * educationNum +
      0.04 * (hours - 40) +
      0.05 * Math.min(age, 55) +
      capitalGain / 4000 +
      (m === 'married' ? 1.2 : 0) +
      (w === 'self_employed' ? 0.5 : w === 'without_pay' ? -2 : 0) +
      random.normal() * 0.7;
    yield {
      age,
      education_num: educationNum,
      hours_per_week: hours,
      capital_gain: capitalGain,
      workclass: w,
      marital_status: m,
      sex: s,
      income_over_50k: score > 0 ? 1 : 0,
    };
  }
}

/** Writes `rows` census-like rows to a CSV file with a header line; resolves to its absolute path. */
export async function generateCensusCsv(options: {
  file: string;
  rows?: number;
  seed?: number;
}): Promise<string> {
  const file = path.resolve(checkNonEmptyString(options.file, 'options.file'));
  const rows = checkInteger(options.rows ?? 10_000, 'options.rows', 0);
  mkdirSync(path.dirname(file), { recursive: true });
  const stream = createWriteStream(file);
  const write = (line: string) =>
    stream.write(line) ? Promise.resolve() : new Promise<void>((resolve) => stream.once('drain', resolve));
  await write(`${CENSUS_COLUMNS.join(',')}\n`);
  for (const row of synthesizeCensusRows(rows, options.seed ?? 1)) {
    await write(`${CENSUS_COLUMNS.map((c) => row[c as keyof CensusRow]).join(',')}\n`);
  }
  await new Promise<void>((resolve, reject) =>
    stream.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  return file;
}

/** Options of {@link loadCensusTable}. */
export interface CensusTableOptions {
  /** A `postgres://` URL; PG* environment variables fill in what is missing. */
  readonly connectionString?: string;
  /** Table to (re)create, optionally schema-qualified (default `census`). */
  readonly table?: string;
  readonly rows?: number;
  readonly seed?: number;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)?$/;

/**
 * (Re)creates a PostgreSQL table of census-like rows with an integer primary key `id` (the key the
 * table reader shards on), in batches of 1,000 rows in one transaction. Resolves to the row count.
 */
export async function loadCensusTable(options: CensusTableOptions = {}): Promise<number> {
  const table = options.table ?? 'census';
  if (!IDENTIFIER.test(table)) {
    throw new TypeError(
      `Expected a plain (optionally schema-qualified) identifier for options.table but received '${table}'`,
    );
  }
  const rows = checkInteger(options.rows ?? 10_000, 'options.rows', 0);
  const { Client } = await loadPg(`loadCensusTable (the ${table} table)`);
  const client = new Client(
    options.connectionString === undefined ? {} : { connectionString: options.connectionString },
  );
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query(`DROP TABLE IF EXISTS ${table}`);
    await client.query(
      `CREATE TABLE ${table} (id integer PRIMARY KEY, age integer, education_num integer, hours_per_week integer,
       capital_gain integer, workclass text, marital_status text, sex text, income_over_50k integer)`,
    );
    let batch: unknown[] = [];
    let id = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const width = CENSUS_COLUMNS.length + 1;
      const tuples = Array.from(
        { length: batch.length / width },
        (_, r) => `(${Array.from({ length: width }, (_, c) => `$${r * width + c + 1}`).join(',')})`,
      );
      await client.query(
        `INSERT INTO ${table} (id, ${CENSUS_COLUMNS.join(', ')}) VALUES ${tuples.join(',')}`,
        batch,
      );
      batch = [];
    };
    for (const row of synthesizeCensusRows(rows, options.seed ?? 1)) {
      batch.push(id++, ...CENSUS_COLUMNS.map((c) => row[c as keyof CensusRow]));
      if (id % 1000 === 0) await flush();
    }
    await flush();
    await client.query('COMMIT');
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await client.end();
  }
  return rows;
}
