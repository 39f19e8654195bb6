import { checkNonEmptyString, checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import type pg from 'pg';
import type {
  DataReader,
  JsonObject,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from '../protocols.js';
import { checkRange } from './check-range.js';
import { DataReaderError } from './errors.js';
import { PgConnections, PgParams, type PgSession, runStatement } from './pg-connections.js';
import { isConnectionError } from './pg-retry.js';
import { quoteIdentifier, quoteQualified } from './sql-identifier.js';
import { checkFilters, checkUnsafeWhere, filterSql, type TableFilter } from './table-filter.js';

export type { FilterOp, FilterValue, TableFilter } from './table-filter.js';

/** Connection settings as plain JSON (a subset of node-postgres's ClientConfig). */
export interface PgConnectionOptions {
  readonly host?: string;
  readonly port?: number;
  readonly user?: string;
  readonly password?: string;
  readonly database?: string;
  readonly ssl?: boolean;
}

/** A row as node-postgres parses it: `int8` and `numeric` are strings, timestamps Dates, json parsed. */
export type TableRow = Record<string, unknown>;

/** Options of {@link TableDataReader.open}; all but none are kept by `describe()`. */
export interface TableDataReaderOptions {
  /**
   * A `postgres://` / `postgresql://` URL or connection settings. PG* environment variables and
   * ~/.pgpass fill in what is missing: prefer them for passwords, since `describe()` repeats this.
   */
  readonly connection: string | PgConnectionOptions;
  /**
   * The table or view. A string is read as SQL would (`public.items`, `"My Table"`: unquoted parts
   * fold to lower case, the search path applies); an array gives the exact parts (`['My Schema',
   * 'My Table']` or `['items']`).
   */
  readonly table: string | readonly string[];
  /** Exact column names to read, in this order. Default: every column, in table order. */
  readonly columns?: readonly string[];
  /**
   * Row filters, all of which a row must pass, e.g. `[{ column: 'label', op: 'is not null' },
   * { column: 'ts', op: '>', value: '2024-01-01' }]`. Columns are exact names (quoted as
   * identifiers), `op` is one of `FILTER_OPS`, and every value is a query parameter compared as the
   * column's type by the server: safe for untrusted input.
   */
  readonly where?: readonly TableFilter[];
  /**
   * Raw SQL boolean expression for what `where` cannot say, e.g. `"a" + "b" > 10`. It is TRUSTED
   * SQL: it can read anything the connection's role may read. It is refused if it holds a `;` or
   * unbalanced parentheses, wrapped in a subquery, sent as one statement through the extended
   * protocol, and run inside a READ ONLY transaction that the reader ends with ROLLBACK, so it
   * cannot write, run a second statement or end the transaction. It cannot use `$n` parameters.
   */
  readonly unsafeWhere?: string;
  /**
   * Exact name of the column that orders the rows and bounds the shards: unique and never NULL.
   * Default: the table's single-column primary key.
   */
  readonly keyColumn?: string;
  /** Rows per shard. Default 10,000. */
  readonly recordsPerShard?: number;
  /** Rows fetched per query while reading. Default 1,000. */
  readonly pageSize?: number;
  /** Retries after a lost connection (per failure, reset by each successful query). Default 5. */
  readonly maxRetries?: number;
  /** First retry delay in ms, doubled per retry, at most 5 s. Default 100. */
  readonly retryDelayMs?: number;
  /** Connect timeout in ms. Default 10,000. */
  readonly connectTimeoutMs?: number;
  /** `application_name` of the reader's connections (visible in pg_stat_activity). Default `edl-table-reader`. */
  readonly applicationName?: string;
}

interface ResolvedTable {
  readonly schema: string;
  readonly name: string;
  readonly oid: string;
  readonly columns: readonly { readonly name: string; readonly type: string }[];
  readonly key: {
    readonly name: string;
    readonly type: string;
    readonly unique: boolean;
    readonly notNull: boolean;
  };
}

/** What a shard name holds: the first record's number and the key range `(after, upTo]`. */
interface ShardBounds {
  readonly start: number;
  /** Exclusive lower bound as key text; null: from the first row. */
  readonly after: string | null;
  /** Inclusive upper bound as key text; null: to the last row. */
  readonly upTo: string | null;
}

const noop = (): void => {};

/**
 * ElasticDL's table reader (the open stand-in for ODPS) over PostgreSQL.
 *
 * - `createShards()` counts the rows and, in the same REPEATABLE READ snapshot, computes one pass of
 *   `row_number() OVER (ORDER BY key)` to take the key of every `recordsPerShard`-th row as a shard
 *   boundary. A shard is a key range `(after, upTo]` (the first and last are open-ended, so every row
 *   that matches the filters falls in exactly one shard), and its name is
 *   `<"schema"."table">:{"start":<first record number>,"after":<key text|null>,"upTo":<key text|null>}`,
 *   so any process can read it back.
 * - `readRecords()` reads a key range with keyset pagination (`key > $last AND key <= $upTo ORDER BY
 *   key LIMIT $page`, never OFFSET); a task that starts inside a shard first finds its lower bound
 *   with one key-only query. Keys travel as text and are compared as the key's type by the server.
 * - A lost connection (pg_terminate_backend, server restart, network) is retried with backoff on a new
 *   connection, resuming after the last row delivered: no row twice, none skipped. After `maxRetries`
 *   failed attempts in a row it fails with `CONNECTION_LOST`.
 *
 * Every query is one statement sent through the extended protocol; identifiers are always quoted and
 * values (filter values included) are parameters. Only `unsafeWhere` is pasted as SQL, and reads run
 * in READ ONLY transactions ended by the reader. Server errors that could quote row values are
 * reported by SQLSTATE only. The table should not change during a job: rows added later are read
 * only if they fall in a shard with room.
 */
export class TableDataReader implements DataReader<TableRow> {
  readonly metadata: ReaderMetadata;
  readonly #options: TableDataReaderOptions;
  readonly #table: ResolvedTable;
  readonly #qualified: string;
  readonly #filters: readonly TableFilter[];
  /** What queries read FROM: the table, or a subquery of it that applies `unsafeWhere`. */
  readonly #source: string;
  readonly #connections: PgConnections;
  readonly #recordsPerShard: number;
  readonly #pageSize: number;
  readonly #maxRetries: number;
  readonly #retryDelayMs: number;
  #closed = false;

  private constructor(options: TableDataReaderOptions, connections: PgConnections, table: ResolvedTable) {
    this.#options = options;
    this.#connections = connections;
    this.#table = table;
    this.#qualified = quoteQualified([table.schema, table.name]);
    this.#filters = options.where === undefined ? [] : checkFilters(options.where, 'options.where');
    // On lines of its own, so that a `--` comment in the SQL cannot swallow the rest.
    this.#source =
      options.unsafeWhere === undefined
        ? this.#qualified
        : `(SELECT * FROM ${this.#qualified} WHERE (\n${options.unsafeWhere}\n)) AS edl_rows`;
    this.#recordsPerShard = checkOptionalInteger(
      options.recordsPerShard,
      'options.recordsPerShard',
      10_000,
      1,
    );
    this.#pageSize = checkOptionalInteger(options.pageSize, 'options.pageSize', 1000, 1, 1_000_000);
    this.#maxRetries = connections.maxRetries;
    this.#retryDelayMs = connections.retryDelayMs;
    this.metadata = {
      table: this.#qualified,
      keyColumn: table.key.name,
      columns: table.columns,
    };
  }

  /** Checks the options, connects, resolves the table, its columns and key from the catalog. */
  static async open(options: TableDataReaderOptions): Promise<TableDataReader> {
    checkObject(options, 'options');
    const clientConfig = toClientConfig(options);
    const table = options.table;
    const tableIsParts =
      Array.isArray(table) &&
      table.length >= 1 &&
      table.length <= 2 &&
      table.every((p) => typeof p === 'string');
    if (!tableIsParts && (typeof table !== 'string' || table.trim() === '')) {
      throw new TypeError(expectedMessage('a table name or [schema, table]', 'options.table', table));
    }
    if (options.columns !== undefined) {
      const ok =
        Array.isArray(options.columns) && options.columns.every((c) => typeof c === 'string' && c !== '');
      if (!ok || options.columns.length === 0) {
        throw new TypeError(
          expectedMessage('a non-empty array of column names', 'options.columns', options.columns),
        );
      }
    }
    if (options.where !== undefined) checkFilters(options.where, 'options.where');
    if (options.unsafeWhere !== undefined) checkUnsafeWhere(options.unsafeWhere, 'options.unsafeWhere');
    if (options.keyColumn !== undefined) checkNonEmptyString(options.keyColumn, 'options.keyColumn');
    // Checked before any connection is made.
    checkOptionalInteger(options.recordsPerShard, 'options.recordsPerShard', 10_000, 1);
    checkOptionalInteger(options.pageSize, 'options.pageSize', 1000, 1, 1_000_000);
    const connections = new PgConnections(
      clientConfig,
      checkOptionalInteger(options.maxRetries, 'options.maxRetries', 5, 0, 100),
      checkOptionalInteger(options.retryDelayMs, 'options.retryDelayMs', 100, 0, 60_000),
    );
    const label = typeof options.table === 'string' ? options.table : quoteQualified(options.table);
    try {
      const table = await connections.withClient(`reading the catalog for ${label}`, (client) =>
        resolveTable(client, options),
      );
      return new TableDataReader(options, connections, table);
    } catch (error) {
      await connections.close();
      throw error;
    }
  }

  /** Key-range shards of `recordsPerShard` rows (the last may be shorter); none for an empty result. */
  async createShards(): Promise<Shard[]> {
    this.#checkOpen();
    const key = quoteIdentifier(this.#table.key.name);
    return this.#connections.withClient(`creating shards of ${this.#qualified}`, async (client) => {
      // Ended by ROLLBACK: nothing was written, and any setting a query changed is undone.
      await runStatement(client, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
      try {
        const checkDuplicates = !this.#table.key.unique;
        const p = new PgParams();
        const where = this.#whereSql(p);
        const counts = await runStatement<{ total: string; nulls: string; duplicates: string | null }>(
          client,
          `SELECT count(*) AS total, count(*) FILTER (WHERE ${key} IS NULL) AS nulls, ` +
            `${checkDuplicates ? `count(${key}) - count(DISTINCT ${key})` : 'NULL'} AS duplicates ` +
            `FROM ${this.#source}${where === '' ? '' : ` WHERE ${where}`}`,
          p.values,
        );
        const row = counts.rows[0]!;
        const nulls = Number(row.nulls);
        const duplicates = row.duplicates === null ? 0 : Number(row.duplicates);
        if (nulls > 0 || duplicates > 0) {
          throw new DataReaderError(
            'BAD_KEY',
            `key column ${key} of ${this.#qualified} has ${nulls} NULL and ${duplicates} duplicate values among the ` +
              'selected rows; keyset reading needs a unique, non-NULL key (set keyColumn)',
          );
        }
        const total = Number(row.total);
        const per = this.#recordsPerShard;
        let boundaries: string[] = [];
        if (total > per) {
          const q = new PgParams();
          const filter = this.#whereSql(q);
          boundaries = (
            await runStatement<{ k: string }>(
              client,
              `SELECT s.k::text AS k FROM (SELECT ${key} AS k, row_number() OVER (ORDER BY ${key}) AS rn ` +
                `FROM ${this.#source} WHERE ${key} IS NOT NULL${filter === '' ? '' : ` AND ${filter}`}) s ` +
                `WHERE s.rn % ${q.add(per)} = 0 AND s.rn < ${q.add(total)} ORDER BY s.rn`,
              q.values,
            )
          ).rows.map((r) => r.k);
        }
        await runStatement(client, 'ROLLBACK');
        const shards: Shard[] = [];
        for (let i = 0, start = 0; start < total; i++, start += per) {
          const bounds: ShardBounds = {
            start,
            after: boundaries[i - 1] ?? null,
            upTo: boundaries[i] ?? null,
          };
          shards.push({ name: this.#shardName(bounds), start, count: Math.min(per, total - start) });
        }
        return shards;
      } catch (error) {
        await runStatement(client, 'ROLLBACK').catch(noop);
        throw error;
      }
    });
  }

  /**
   * Yields the rows `[range.start, range.end)` of the shard `range.shardName`, in key order, as plain
   * objects of the selected columns.
   */
  async *readRecords(range: RecordRange): AsyncGenerator<TableRow> {
    this.#checkOpen();
    const { shardName, start, end } = checkRange(range);
    const bounds = this.#parseShardName(shardName);
    if (start < bounds.start) {
      throw new DataReaderError('OUT_OF_RANGE', `records [${start}, ${end}) start before shard ${shardName}`);
    }
    let remaining = end - start;
    if (remaining === 0) return;
    const key = quoteIdentifier(this.#table.key.name);
    const columns = this.#table.columns.map((c) => c.name);
    const selectList = [...columns.map(quoteIdentifier), `${key}::text AS edl_key_text`].join(', ');
    const keyIndex = columns.length;
    const session: PgSession = { client: undefined };
    try {
      let after = bounds.after;
      const skip = start - bounds.start;
      if (skip > 0) {
        // The task starts inside the shard: its lower bound is the key of the shard's skip-th row.
        const found = await this.#connections.query<string[]>(
          session,
          `finding row ${start} of ${shardName}`,
          (p) => ({
            text:
              `SELECT s.k::text FROM (SELECT ${key} AS k FROM ${this.#source} WHERE ${this.#rangeSql(key, after, bounds.upTo, p)}` +
              `${this.#andWhere(p)} ORDER BY ${key} LIMIT ${p.add(skip)}) s ORDER BY s.k DESC LIMIT 1`,
          }),
        );
        const row = found.rows[0];
        if (row === undefined) return;
        after = row[0]!;
      }
      while (remaining > 0) {
        const limit = Math.min(this.#pageSize, remaining);
        const lower = after;
        const page = await this.#connections.query<unknown[]>(
          session,
          `reading ${shardName} after key ${lower}`,
          (p) => ({
            text:
              `SELECT ${selectList} FROM ${this.#source} WHERE ${this.#rangeSql(key, lower, bounds.upTo, p)}` +
              `${this.#andWhere(p)} ORDER BY ${key} LIMIT ${p.add(limit)}`,
          }),
        );
        for (const values of page.rows) {
          const row: TableRow = {};
          for (let c = 0; c < keyIndex; c++) row[columns[c]!] = values[c];
          // Only after the consumer took the row does it count as delivered.
          yield row;
          after = values[keyIndex] as string;
          remaining -= 1;
        }
        if (page.rows.length < limit) return;
      }
    } finally {
      this.#connections.release(session);
    }
  }

  /** `{ type: 'table', params }` with the resolved table parts and key, for `createDataReader`. */
  describe(): ReaderDescription {
    const o = this.#options;
    const params: JsonObject = {
      connection: typeof o.connection === 'string' ? o.connection : { ...(o.connection as JsonObject) },
      table: [this.#table.schema, this.#table.name],
      keyColumn: this.#table.key.name,
      recordsPerShard: this.#recordsPerShard,
      pageSize: this.#pageSize,
      maxRetries: this.#maxRetries,
      retryDelayMs: this.#retryDelayMs,
    };
    if (o.columns !== undefined) params.columns = [...o.columns];
    if (this.#filters.length > 0) params.where = this.#filters.map((f) => ({ ...f }) as JsonObject);
    if (o.unsafeWhere !== undefined) params.unsafeWhere = o.unsafeWhere;
    if (o.connectTimeoutMs !== undefined) params.connectTimeoutMs = o.connectTimeoutMs;
    if (o.applicationName !== undefined) params.applicationName = o.applicationName;
    return { type: 'table', params };
  }

  /** Ends the idle connection; a read in progress keeps its own until it finishes. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#connections.close();
  }

  /** The structured filters as SQL with their values added to `p`; '' when there are none. */
  #whereSql(p: PgParams): string {
    return filterSql(this.#filters, p);
  }

  #andWhere(p: PgParams): string {
    const sql = this.#whereSql(p);
    return sql === '' ? '' : ` AND ${sql}`;
  }

  #rangeSql(key: string, after: string | null, upTo: string | null, p: PgParams): string {
    const parts: string[] = [];
    parts.push(after === null ? `${key} IS NOT NULL` : `${key} > ${p.add(after)}`);
    if (upTo !== null) parts.push(`${key} <= ${p.add(upTo)}`);
    return parts.join(' AND ');
  }

  #shardName(bounds: ShardBounds): string {
    return `${this.#qualified}:${JSON.stringify({ start: bounds.start, after: bounds.after, upTo: bounds.upTo })}`;
  }

  #parseShardName(name: string): ShardBounds {
    const prefix = `${this.#qualified}:`;
    if (name.startsWith(prefix)) {
      try {
        const parsed: unknown = JSON.parse(name.slice(prefix.length));
        const b = parsed as { start?: unknown; after?: unknown; upTo?: unknown };
        const isBound = (v: unknown) => v === null || typeof v === 'string';
        if (typeof b.start === 'number' && Number.isInteger(b.start) && isBound(b.after) && isBound(b.upTo)) {
          return { start: b.start, after: b.after as string | null, upTo: b.upTo as string | null };
        }
      } catch {
        // Falls through to the error below.
      }
    }
    throw new DataReaderError(
      'UNKNOWN_SHARD',
      `shard ${JSON.stringify(name)} is not a shard of table ${this.#qualified}`,
    );
  }

  #checkOpen(): void {
    if (this.#closed) throw new DataReaderError('CLOSED', `the reader of ${this.#qualified} is closed`);
  }
}

/**
 * Startup settings of every connection: strings as the SQL standard reads them (a backslash is no
 * escape), whatever the role or database defaults say, so that the check of `unsafeWhere` lexes
 * string literals as the server does.
 */
const STARTUP_OPTIONS = '-c standard_conforming_strings=on';

function toClientConfig(options: TableDataReaderOptions): pg.ClientConfig {
  const connection = options.connection;
  const application_name =
    options.applicationName === undefined
      ? 'edl-table-reader'
      : checkNonEmptyString(options.applicationName, 'options.applicationName');
  const connectionTimeoutMillis = checkOptionalInteger(
    options.connectTimeoutMs,
    'options.connectTimeoutMs',
    10_000,
    1,
  );
  if (typeof connection === 'string' && connection !== '') {
    return {
      connectionString: connection,
      application_name,
      connectionTimeoutMillis,
      options: STARTUP_OPTIONS,
    };
  }
  if (typeof connection === 'object' && connection !== null && !Array.isArray(connection)) {
    return { ...connection, application_name, connectionTimeoutMillis, options: STARTUP_OPTIONS };
  }
  throw new TypeError(
    expectedMessage('a postgres:// URL or connection settings', 'options.connection', connection),
  );
}

/** Finds the table, its selected columns with their types, and its key column in the catalog. */
async function resolveTable(client: pg.Client, options: TableDataReaderOptions): Promise<ResolvedTable> {
  const spec = typeof options.table === 'string' ? options.table : quoteQualified(options.table);
  let found: pg.QueryResult<{ oid: string; schema: string; name: string }>;
  try {
    found = await runStatement(
      client,
      'SELECT c.oid::text AS oid, n.nspname AS schema, c.relname AS name FROM pg_class c ' +
        'JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = to_regclass($1)',
      [spec],
    );
  } catch (error) {
    if (isConnectionError(error)) throw error;
    throw new DataReaderError(
      'TABLE_NOT_FOUND',
      `${spec} is not a valid table name: ${(error as Error).message}`,
      error,
    );
  }
  const table = found.rows[0];
  if (table === undefined) {
    throw new DataReaderError(
      'TABLE_NOT_FOUND',
      `table ${spec} does not exist (or is not on the search path)`,
    );
  }
  const attributes = await runStatement<{ name: string; type: string; not_null: boolean; unique: boolean }>(
    client,
    'SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS not_null, ' +
      'EXISTS (SELECT 1 FROM pg_index i WHERE i.indrelid = a.attrelid AND i.indisunique AND i.indnkeyatts = 1 ' +
      'AND i.indkey[0] = a.attnum AND i.indpred IS NULL) AS unique ' +
      'FROM pg_attribute a WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum',
    [table.oid],
  );
  const byName = new Map(attributes.rows.map((a) => [a.name, a]));
  const qualified = quoteQualified([table.schema, table.name]);
  const columnNotFound = (name: string) =>
    new DataReaderError(
      'COLUMN_NOT_FOUND',
      `${qualified} has no column ${JSON.stringify(name)}; it has ${attributes.rows.map((a) => JSON.stringify(a.name)).join(', ')}`,
    );
  const selected = (options.columns ?? attributes.rows.map((a) => a.name)).map((name) => {
    const attribute = byName.get(name);
    if (attribute === undefined) throw columnNotFound(name);
    return { name: attribute.name, type: attribute.type };
  });
  let keyName = options.keyColumn;
  if (keyName === undefined) {
    const primary = await runStatement<{ name: string }>(
      client,
      'SELECT a.attname AS name FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid ' +
        'AND a.attnum = i.indkey[0] WHERE i.indrelid = $1 AND i.indisprimary AND i.indnkeyatts = 1',
      [table.oid],
    );
    keyName = primary.rows[0]?.name;
    if (keyName === undefined) {
      throw new DataReaderError(
        'NO_KEY_COLUMN',
        `${qualified} has no single-column primary key; set keyColumn to a unique, non-NULL column`,
      );
    }
  }
  const key = byName.get(keyName);
  if (key === undefined) throw columnNotFound(keyName);
  for (const filter of options.where ?? []) {
    if (!byName.has(filter.column)) throw columnNotFound(filter.column);
  }
  return {
    schema: table.schema,
    name: table.name,
    oid: table.oid,
    columns: selected,
    key: { name: key.name, type: key.type, unique: key.unique, notNull: key.not_null },
  };
}
