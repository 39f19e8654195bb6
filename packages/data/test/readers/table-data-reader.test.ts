import pg from 'pg';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Shard } from '../../src/protocols.js';
import { createDataReader, TableDataReader, type TableRow } from '../../src/readers/index.js';
import { PgConnections } from '../../src/readers/pg-connections.js';
import { startPostgres, type TestPostgres } from '../setup/postgres.js';

let server: TestPostgres;
let admin: pg.Client;

const SCHEMA = 'Data Set';
const TABLE = 'My "odd" Table';
const ROWS = 1003;

/** Why the server could not be started: every test then fails with it (never a skip). */
let setupError: unknown;

beforeAll(async () => {
  try {
    server = await startPostgres();
    admin = new pg.Client({ connectionString: server.connectionString });
    await admin.connect();
    await admin.query(`
      CREATE SCHEMA "Data Set";
      CREATE TABLE "Data Set"."My ""odd"" Table" (
        "Key Col" integer PRIMARY KEY,
        "value" integer NOT NULL,
        "Grüße" text,
        big int8
      );
      INSERT INTO "Data Set"."My ""odd"" Table"
        SELECT i * 3, i % 10, 'row ' || i, i::int8 * 10000000000 FROM generate_series(1, ${ROWS}) AS i;
      CREATE TABLE words (word text PRIMARY KEY, n integer);
      INSERT INTO words VALUES ('b', 2), ('a', 1), ('a b', 3), ('A', 4), ('é', 5), ('z''q', 6), ('', 7), ('a,b', 8);
      CREATE TABLE pairs (a integer, b integer, PRIMARY KEY (a, b));
      CREATE TABLE dupes (k integer, v integer);
      INSERT INTO dupes VALUES (1, 1), (1, 2), (2, 3);
      CREATE TABLE victim (id integer PRIMARY KEY);
      INSERT INTO victim SELECT generate_series(1, 5);
      CREATE SEQUENCE victim_seq;
      CREATE TABLE secrets (id integer PRIMARY KEY, secret text);
      INSERT INTO secrets VALUES (1, 'hunter2-top-secret');
    `);
  } catch (error) {
    setupError = error;
  }
}, 120_000);

beforeEach(() => {
  if (setupError !== undefined) throw setupError;
});

afterAll(async () => {
  await admin?.end();
  await server?.stop();
});

async function drain(
  reader: TableDataReader,
  shardName: string,
  start: number,
  end: number,
): Promise<TableRow[]> {
  const rows: TableRow[] = [];
  for await (const row of reader.readRecords({ shardName, start, end })) rows.push(row);
  return rows;
}

/** Waits until backend `pid` has left pg_stat_activity (termination is asynchronous). */
async function waitUntilGone(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    const left = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1', [pid]);
    if (left.rows.length === 0) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`backend ${pid} did not terminate`);
}

async function expectedRows(sql: string): Promise<TableRow[]> {
  return (await admin.query(sql)).rows;
}

describe('TableDataReader', () => {
  it('resolves quoted, schema-qualified names and reads column types from the catalog', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: `"Data Set"."My ""odd"" Table"`,
      recordsPerShard: 100,
    });
    try {
      expect(reader.metadata).toEqual({
        table: '"Data Set"."My ""odd"" Table"',
        keyColumn: 'Key Col',
        columns: [
          { name: 'Key Col', type: 'integer' },
          { name: 'value', type: 'integer' },
          { name: 'Grüße', type: 'text' },
          { name: 'big', type: 'bigint' },
        ],
      });
      expect(reader.describe()).toEqual({
        type: 'table',
        params: {
          connection: server.connectionString,
          table: [SCHEMA, TABLE],
          keyColumn: 'Key Col',
          recordsPerShard: 100,
          pageSize: 1000,
          maxRetries: 5,
          retryDelayMs: 100,
        },
      });
    } finally {
      await reader.close();
    }
  });

  it('creates shards that cover every row exactly once, and reads them by keyset pages', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      recordsPerShard: 100,
      pageSize: 7,
    });
    try {
      const shards = await reader.createShards();
      expect(shards.map((s) => s.count)).toEqual([...Array(10).fill(100), 3]);
      expect(shards.map((s) => s.start)).toEqual(shards.map((_, i) => i * 100));
      const bounds = shards.map((s) => JSON.parse(s.name.slice('"Data Set"."My ""odd"" Table":'.length)));
      expect(bounds[0]).toEqual({ start: 0, after: null, upTo: '300' });
      expect(bounds[1]).toEqual({ start: 100, after: '300', upTo: '600' });
      expect(bounds[10]).toEqual({ start: 1000, after: '3000', upTo: null });
      const all: TableRow[] = [];
      for (const shard of shards) {
        const rows = await drain(reader, shard.name, shard.start, shard.start + shard.count);
        expect(rows).toHaveLength(shard.count);
        all.push(...rows);
      }
      expect(all).toEqual(
        await expectedRows(`SELECT * FROM "Data Set"."My ""odd"" Table" ORDER BY "Key Col"`),
      );
      expect(all[0]).toEqual({ 'Key Col': 3, value: 1, Grüße: 'row 1', big: '10000000000' });
    } finally {
      await reader.close();
    }
  });

  it('reads tasks that start and end inside shards', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      columns: ['value', 'Key Col'],
      recordsPerShard: 250,
      pageSize: 16,
    });
    try {
      const expected = await expectedRows(
        `SELECT "value", "Key Col" FROM "Data Set"."My ""odd"" Table" ORDER BY "Key Col"`,
      );
      const shards = await reader.createShards();
      const all: TableRow[] = [];
      for (const shard of shards) {
        // Tasks of 33 records, as the master cuts shards.
        for (let start = shard.start; start < shard.start + shard.count; start += 33) {
          const end = Math.min(start + 33, shard.start + shard.count);
          const rows = await drain(reader, shard.name, start, end);
          expect(rows).toEqual(expected.slice(start, end));
          all.push(...rows);
        }
      }
      expect(all).toEqual(expected);
      expect(Object.keys(all[0]!)).toEqual(['value', 'Key Col']);
    } finally {
      await reader.close();
    }
  });

  it('applies structured where filters, with values as parameters', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      where: [
        { column: 'value', op: 'in', value: [3, 4] },
        { column: 'Grüße', op: 'NOT LIKE' as 'not like', value: 'row 1%' },
        { column: 'big', op: 'is not null' },
        { column: 'Key Col', op: '<=', value: '2400' },
      ],
      recordsPerShard: 40,
      pageSize: 9,
    });
    try {
      const expected = await expectedRows(
        `SELECT * FROM "Data Set"."My ""odd"" Table" WHERE "value" IN (3, 4) AND "Grüße" NOT LIKE 'row 1%'
         AND "Key Col" <= 2400 ORDER BY "Key Col"`,
      );
      expect(expected).toHaveLength(138);
      const shards = await reader.createShards();
      expect(shards.reduce((n, s) => n + s.count, 0)).toBe(138);
      const all: TableRow[] = [];
      for (const s of shards) {
        // Tasks that start inside a shard use the filters in the key-finding query too.
        for (let start = s.start; start < s.start + s.count; start += 15) {
          all.push(...(await drain(reader, s.name, start, Math.min(start + 15, s.start + s.count))));
        }
      }
      expect(all).toEqual(expected);
      expect(reader.describe().params.where).toEqual([
        { column: 'value', op: 'in', value: [3, 4] },
        { column: 'Grüße', op: 'not like', value: 'row 1%' },
        { column: 'big', op: 'is not null' },
        { column: 'Key Col', op: '<=', value: '2400' },
      ]);
    } finally {
      await reader.close();
    }
  });

  it('applies raw SQL given as unsafeWhere inside a subquery', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      unsafeWhere: `"value" = 3 OR "value" = 4 -- a comment must not swallow the rest`,
      where: [{ column: 'value', op: '!=', value: 4 }],
      recordsPerShard: 40,
      pageSize: 9,
    });
    try {
      const expected = await expectedRows(
        `SELECT * FROM "Data Set"."My ""odd"" Table" WHERE "value" = 3 ORDER BY "Key Col"`,
      );
      expect(expected).toHaveLength(101);
      const shards = await reader.createShards();
      expect(shards.reduce((n, s) => n + s.count, 0)).toBe(101);
      const all: TableRow[] = [];
      for (const s of shards) all.push(...(await drain(reader, s.name, s.start + 1, s.start + s.count)));
      expect(all).toEqual(expected.filter((_, i) => i % 40 !== 0));
    } finally {
      await reader.close();
    }
  });

  it('uses text keys that need care (quotes, commas, empty, case)', async () => {
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: 'words',
      recordsPerShard: 3,
    });
    try {
      const shards = await reader.createShards();
      expect(shards.map((s) => s.count)).toEqual([3, 3, 2]);
      const all: TableRow[] = [];
      for (const s of shards) all.push(...(await drain(reader, s.name, s.start, s.start + s.count)));
      expect(all).toEqual(await expectedRows('SELECT * FROM words ORDER BY word'));
    } finally {
      await reader.close();
    }
  });

  it('resumes after its connection is killed mid-read, with no row twice and none missing', async () => {
    const applicationName = 'edl-kill-test';
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      recordsPerShard: 600,
      pageSize: 25,
      retryDelayMs: 10,
      applicationName,
    });
    try {
      const expected = await expectedRows(`SELECT * FROM "Data Set"."My ""odd"" Table" ORDER BY "Key Col"`);
      const shards = await reader.createShards();
      const delivered: TableRow[] = [];
      let kills = 0;
      for (const shard of shards) {
        const iterator = reader.readRecords({
          shardName: shard.name,
          start: shard.start + 10,
          end: shard.start + shard.count,
        });
        for (;;) {
          const next = await iterator.next();
          if (next.done) break;
          delivered.push(next.value);
          // Kill the reader's backend every 37 rows: more than a page apart, so the reader has
          // reconnected in between, and at every position within a page.
          if (delivered.length % 37 === 0) {
            const killed = await admin.query<{ pid: number; ok: boolean }>(
              'SELECT pid, pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1',
              [applicationName],
            );
            expect(killed.rows.map((r) => r.ok)).toEqual([true]);
            await waitUntilGone(killed.rows[0]!.pid);
            kills += 1;
          }
        }
      }
      expect(kills).toBe(Math.floor(983 / 37));
      expect(delivered).toEqual([...expected.slice(10, 600), ...expected.slice(610)]);
    } finally {
      await reader.close();
    }
  });

  it('resumes when its connection is killed while a page query is running', async () => {
    const applicationName = 'edl-kill-active-test';
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: [SCHEMA, TABLE],
      // An uncorrelated subquery runs once per query: every page query takes 150 ms.
      unsafeWhere: '(SELECT pg_sleep(0.15)) IS NOT NULL',
      recordsPerShard: 5000,
      pageSize: 150,
      retryDelayMs: 10,
      applicationName,
    });
    try {
      const expected = await expectedRows(`SELECT * FROM "Data Set"."My ""odd"" Table" ORDER BY "Key Col"`);
      const [shard] = await reader.createShards();
      const iterator = reader.readRecords({ shardName: shard!.name, start: 0, end: shard!.count });
      const delivered: TableRow[] = [];
      let kills = 0;
      for (;;) {
        const pending = iterator.next();
        if (delivered.length % 300 === 150) {
          // The next() above started a page query; kill the backend while it runs.
          await new Promise((r) => setTimeout(r, 60));
          const killed = await admin.query<{ pid: number; ok: boolean }>(
            `SELECT pid, pg_terminate_backend(pid) AS ok FROM pg_stat_activity
             WHERE application_name = $1 AND state = 'active'`,
            [applicationName],
          );
          expect(killed.rows.map((r) => r.ok)).toEqual([true]);
          await waitUntilGone(killed.rows[0]!.pid);
          kills += 1;
        }
        const next = await pending;
        if (next.done) break;
        delivered.push(next.value);
      }
      expect(kills).toBe(3);
      expect(delivered).toEqual(expected);
    } finally {
      await reader.close();
    }
  });

  it('fails with CONNECTION_LOST after its bounded retries', async () => {
    await admin.query(`CREATE ROLE edl_reader LOGIN; GRANT USAGE ON SCHEMA "Data Set" TO edl_reader;
      GRANT SELECT ON ALL TABLES IN SCHEMA "Data Set" TO edl_reader`);
    const url = new URL(server.connectionString);
    url.username = 'edl_reader';
    const reader = await TableDataReader.open({
      connection: url.toString(),
      table: [SCHEMA, TABLE],
      recordsPerShard: 2000,
      pageSize: 10,
      maxRetries: 3,
      retryDelayMs: 5,
      applicationName: 'edl-lost-test',
    });
    try {
      const [shard] = await reader.createShards();
      const iterator = reader.readRecords({ shardName: shard!.name, start: 0, end: shard!.count });
      expect((await iterator.next()).value).toMatchObject({ 'Key Col': 3 });
      // No new connection of that role is accepted any more (SQLSTATE 53300, retryable).
      await admin.query('ALTER ROLE edl_reader CONNECTION LIMIT 0');
      await admin.query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'edl-lost-test'`,
      );
      let count = 1;
      const error = await (async () => {
        try {
          for (;;) {
            const next = await iterator.next();
            if (next.done) return undefined;
            count += 1;
          }
        } catch (e) {
          return e;
        }
      })();
      expect(count).toBe(10);
      expect(error).toMatchObject({ code: 'CONNECTION_LOST' });
      expect((error as Error).message).toMatch(
        /^CONNECTION_LOST: reading "Data Set"\."My ""odd"" Table":\{.*\} after key 30: connection lost and 3 retries failed; last error: too many connections for role "edl_reader" \(53300\)$/,
      );
    } finally {
      await reader.close();
    }
  });

  it('gives clear errors for a missing table, column, key, bad key and unknown shard', async () => {
    const connection = server.connectionString;
    await expect(TableDataReader.open({ connection, table: 'nope' })).rejects.toThrow(
      'TABLE_NOT_FOUND: table nope does not exist (or is not on the search path)',
    );
    await expect(TableDataReader.open({ connection, table: 'My "odd" Table' })).rejects.toMatchObject({
      code: 'TABLE_NOT_FOUND',
    });
    await expect(
      TableDataReader.open({ connection, table: [SCHEMA, TABLE], columns: ['nope'] }),
    ).rejects.toThrow(
      `COLUMN_NOT_FOUND: "Data Set"."My ""odd"" Table" has no column "nope"; it has "Key Col", "value", "Grüße", "big"`,
    );
    await expect(TableDataReader.open({ connection, table: 'pairs' })).rejects.toMatchObject({
      code: 'NO_KEY_COLUMN',
    });
    const dupes = await TableDataReader.open({ connection, table: 'dupes', keyColumn: 'k' });
    await expect(dupes.createShards()).rejects.toThrow(
      'BAD_KEY: key column "k" of "public"."dupes" has 0 NULL and 1 duplicate values among the selected rows',
    );
    await dupes.close();
    const bad = await TableDataReader.open({ connection, table: 'words', unsafeWhere: 'no_such_column > 1' });
    await expect(bad.createShards()).rejects.toThrow(
      /^QUERY_FAILED: creating shards of "public"\."words": column "no_such_column" does not exist \(42703\)$/,
    );
    await expect(drain(bad, 'other:{}', 0, 1)).rejects.toMatchObject({ code: 'UNKNOWN_SHARD' });
    await bad.close();
    await expect(
      TableDataReader.open({ connection: 42 as unknown as string, table: 'words' }),
    ).rejects.toThrow(
      new TypeError(
        'Expected a postgres:// URL or connection settings for options.connection but received 42',
      ),
    );
  });

  it('gives every shard to one reader and reads it from another (describe round trip)', async () => {
    const master = await TableDataReader.open({
      connection: server.connectionString,
      table: 'words',
      recordsPerShard: 5,
    });
    const shards: Shard[] = await master.createShards();
    await master.close();
    const params = master.describe().params as unknown as ConstructorParameters<typeof Object>[0];
    const worker = await TableDataReader.open(params as Parameters<typeof TableDataReader.open>[0]);
    try {
      const rows: TableRow[] = [];
      for (const s of shards) rows.push(...(await drain(worker, s.name, s.start, s.start + s.count)));
      expect(rows).toEqual(await expectedRows('SELECT * FROM words ORDER BY word'));
    } finally {
      await worker.close();
    }
  });

  it('is created from postgres:// and postgresql:// URLs by createDataReader, and re-created from describe()', async () => {
    const url = server.connectionString.replace(/^postgresql:/, 'postgres:');
    const reader = await createDataReader(url, { table: 'words', recordsPerShard: 3, pageSize: 2 });
    expect(reader).toBeInstanceOf(TableDataReader);
    const again = await createDataReader(JSON.parse(JSON.stringify(reader.describe())));
    const other = await createDataReader(server.connectionString, {
      table: '"words"',
      recordsPerShard: 3,
      pageSize: 2,
    });
    try {
      expect(again.describe()).toEqual(reader.describe());
      expect(other.describe()).toEqual({
        ...reader.describe(),
        params: { ...reader.describe().params, connection: server.connectionString },
      });
      const shards = await reader.createShards();
      expect(await again.createShards()).toEqual(shards);
      const rows: unknown[] = [];
      for (const s of shards) {
        for await (const row of again.readRecords({
          shardName: s.name,
          start: s.start,
          end: s.start + s.count,
        }))
          rows.push(row);
      }
      expect(rows).toEqual(await expectedRows('SELECT * FROM words ORDER BY word'));
    } finally {
      await reader.close?.();
      await again.close?.();
      await other.close?.();
    }
  });
});

describe('TableDataReader against SQL injection', () => {
  const victimIntact = async () => {
    expect((await admin.query('SELECT count(*)::int AS n FROM victim')).rows).toEqual([{ n: 5 }]);
    expect((await admin.query('SELECT is_called FROM victim_seq')).rows).toEqual([{ is_called: false }]);
  };
  const drop = '; DROP TABLE victim; --';

  it('finds no table, schema, column or key column named by an injection attempt', async () => {
    const connection = server.connectionString;
    for (const table of [
      `words${drop}`,
      `words"${drop}`,
      `words'); DROP TABLE victim; --`,
      ['public', `words"${drop}`],
      [`public"${drop}`, 'words'],
    ]) {
      await expect(TableDataReader.open({ connection, table })).rejects.toMatchObject({
        code: 'TABLE_NOT_FOUND',
      });
    }
    const column = `word", (SELECT 1)) AS x${drop}`;
    for (const options of [
      { columns: [column] },
      { keyColumn: column },
      { where: [{ column, op: '=' as const, value: 'a' }] },
    ]) {
      await expect(TableDataReader.open({ connection, table: 'words', ...options })).rejects.toThrow(
        `COLUMN_NOT_FOUND: "public"."words" has no column ${JSON.stringify(column)}`,
      );
    }
    await victimIntact();
  });

  it('passes filter values as parameters and checks operators against a fixed list', async () => {
    const connection = server.connectionString;
    for (const value of [`a'${drop}`, `' OR '1'='1`, `a') OR (1=1`, '$1', "\\'; DROP TABLE victim; --"]) {
      const reader = await TableDataReader.open({
        connection,
        table: 'words',
        where: [
          { column: 'word', op: '=', value },
          { column: 'word', op: 'not in', value: [value, `${value}'`] },
        ],
      });
      try {
        expect(await reader.createShards()).toEqual([]);
      } finally {
        await reader.close();
      }
    }
    const [shard] = await (async () => {
      const reader = await TableDataReader.open({
        connection,
        table: 'words',
        where: [{ column: 'word', op: 'in', value: ["z'q", 'a,b', `a${drop}`] }],
      });
      try {
        const shards = await reader.createShards();
        const rows = await drain(reader, shards[0]!.name, 0, shards[0]!.count);
        expect(rows).toEqual([
          { word: 'a,b', n: 8 },
          { word: "z'q", n: 6 },
        ]);
        return shards;
      } finally {
        await reader.close();
      }
    })();
    expect(shard?.count).toBe(2);
    await expect(
      TableDataReader.open({
        connection,
        table: 'words',
        where: [{ column: 'word', op: `= '' OR 1=1${drop}` as '=', value: 'a' }],
      }),
    ).rejects.toThrow(
      /^Expected one of =, !=, <>, <, <=, >, >=, in, not in, like, not like, ilike, not ilike, is null, is not null for options\.where\[0\]\.op but received "= '' OR 1=1; DROP TABLE victim; --"$/,
    );
    await expect(
      TableDataReader.open({ connection, table: 'words', where: `word = 'a'${drop}` as unknown as [] }),
    ).rejects.toThrow(
      new TypeError(
        `Expected an array of filters [{ column, op, value }] for options.where but received "word = 'a'; DROP TABLE victim; --" (raw SQL is accepted only as options.unsafeWhere)`,
      ),
    );
    await expect(
      TableDataReader.open({
        connection,
        table: 'words',
        where: [{ column: 'n', op: '=', value: { x: 1 } as unknown as string }],
      }),
    ).rejects.toThrow(TypeError);
    await victimIntact();
  });

  it('refuses an unsafeWhere of several statements before connecting', async () => {
    for (const unsafeWhere of [
      '1=1); COMMIT; DROP TABLE victim; COMMIT; BEGIN; SELECT (1',
      `true; DROP TABLE victim`,
      '1=1) OR (1=1',
      `'a' = 'a''; DROP TABLE victim; --'; DROP TABLE victim`,
      '$x$ ; $x$ = $x$ $x$; DROP TABLE victim',
      '/* /* nested */ ; */ true; DROP TABLE victim',
    ]) {
      await expect(
        TableDataReader.open({
          connection: 'postgresql://nobody@127.0.0.1:1/none',
          table: 'words',
          unsafeWhere,
        }),
      ).rejects.toThrow(
        /^Expected one SQL boolean expression \(no ";", balanced parentheses\) for options\.unsafeWhere but received .*: it (holds a ";" outside quotes and comments|closes a parenthesis it did not open)$/,
      );
    }
    // Semicolons and parentheses inside quotes and comments are SQL text, not structure.
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: 'words',
      unsafeWhere: `word <> ';)' AND word <> $t$;)$t$ AND "n" <> 99 -- ;)\n AND /* ;) /* ( */ */ word <> E'\\';)'`,
    });
    try {
      expect((await reader.createShards()).reduce((n, s) => n + s.count, 0)).toBe(8);
    } finally {
      await reader.close();
    }
    await victimIntact();
  });

  it('runs every query as one statement in a READ ONLY transaction that SQL cannot end or widen', async () => {
    // The extended protocol: the server refuses several statements whatever the text holds.
    const connections = new PgConnections({ connectionString: server.connectionString }, 0, 1);
    const session = { client: undefined };
    try {
      await expect(
        connections.query(session, 'injecting', () => ({ text: 'SELECT 1; DROP TABLE victim' })),
      ).rejects.toThrow(
        'QUERY_FAILED: injecting: cannot insert multiple commands into a prepared statement (42601)',
      );
      await expect(
        connections.query(session, 'committing', () => ({ text: 'COMMIT; DROP TABLE victim' })),
      ).rejects.toMatchObject({ code: 'QUERY_FAILED' });
    } finally {
      connections.release(session);
      await connections.close();
    }
    // Single statements that would write, or turn the transaction read-write, fail.
    for (const unsafeWhere of [
      `nextval('victim_seq') > 0`,
      `set_config('transaction_read_only', 'off', true) IS NOT NULL AND nextval('victim_seq') > 0`,
    ]) {
      const reader = await TableDataReader.open({
        connection: server.connectionString,
        table: 'victim',
        unsafeWhere,
      });
      try {
        await expect(reader.createShards()).rejects.toThrow(
          /^QUERY_FAILED: creating shards of "public"\."victim": .*(read-only transaction|transaction read-write mode).* \(2500[16]\)$/,
        );
      } finally {
        await reader.close();
      }
    }
    // What PostgreSQL allows a read-only transaction to change does not survive the reader's
    // ROLLBACK: a large object, a session default.
    const creating = await TableDataReader.open({
      connection: server.connectionString,
      table: 'victim',
      unsafeWhere: 'lo_create(0) > 0',
    });
    try {
      expect((await creating.createShards()).map((s) => s.count)).toEqual([5]);
    } finally {
      await creating.close();
    }
    const reader = await TableDataReader.open({
      connection: server.connectionString,
      table: 'victim',
      unsafeWhere: `set_config('default_transaction_read_only', 'off', false) = 'off' AND current_setting('transaction_read_only') = 'on'`,
      recordsPerShard: 2,
    });
    try {
      const shards = await reader.createShards();
      expect(shards.map((s) => s.count)).toEqual([2, 2, 1]);
      const rows: TableRow[] = [];
      for (const s of shards) rows.push(...(await drain(reader, s.name, s.start, s.start + s.count)));
      expect(rows).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }, { id: 5 }]);
    } finally {
      await reader.close();
    }
    expect((await admin.query('SELECT count(*)::int AS n FROM pg_largeobject_metadata')).rows).toEqual([
      { n: 0 },
    ]);
    await victimIntact();
  });

  it('reads strings as the SQL standard does, whatever the role defaults, as the unsafeWhere check does', async () => {
    await admin.query(`CREATE ROLE edl_old_strings LOGIN; ALTER ROLE edl_old_strings SET standard_conforming_strings = off;
      GRANT SELECT ON words TO edl_old_strings`);
    const url = new URL(server.connectionString);
    url.username = 'edl_old_strings';
    const plain = new pg.Client({ connectionString: url.toString() });
    await plain.connect();
    try {
      expect((await plain.query('SHOW standard_conforming_strings')).rows).toEqual([
        { standard_conforming_strings: 'off' },
      ]);
    } finally {
      await plain.end();
    }
    // With backslash escapes, 'a\' would not end and the parenthesis would be outside a string.
    const reader = await TableDataReader.open({
      connection: url.toString(),
      table: 'words',
      unsafeWhere: `current_setting('standard_conforming_strings') = 'on' AND word <> 'a\\' AND word <> ')'`,
    });
    try {
      expect((await reader.createShards()).reduce((n, s) => n + s.count, 0)).toBe(8);
    } finally {
      await reader.close();
    }
  });

  it('does not echo values a query read in its errors', async () => {
    for (const options of [
      { unsafeWhere: '(SELECT secret FROM secrets LIMIT 1)::integer > 0' },
      {
        unsafeWhere: `n > 0 AND (SELECT 1 / (length(secret) - 18) FROM secrets) > 0 OR (SELECT secret FROM secrets)::int = 1`,
      },
      { where: [{ column: 'n', op: '=' as const, value: 'hunter2-top-secret' }] },
    ]) {
      const reader = await TableDataReader.open({
        connection: server.connectionString,
        table: 'words',
        ...options,
      });
      try {
        const error = await reader.createShards().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(error).toMatchObject({ code: 'QUERY_FAILED' });
        expect((error as Error).message).toMatch(
          /^QUERY_FAILED: creating shards of "public"\."words": the server rejected the query with SQLSTATE 22\w{3} \(its message is not shown, as it can quote row values\)$/,
        );
        expect(JSON.stringify(error, Object.getOwnPropertyNames(error))).not.toContain('hunter2');
        expect((error as Error).cause).toBeUndefined();
      } finally {
        await reader.close();
      }
    }
  });
});
