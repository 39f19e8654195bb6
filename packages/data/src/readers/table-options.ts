import { checkNonEmptyString, checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import type pg from 'pg';
import { checkFilters, checkUnsafeWhere, type TableFilter } from './table-filter.js';

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

/**
 * Checks every option of the table reader before any connection is made, and returns the
 * node-postgres settings of its connections.
 */
export function checkTableReaderOptions(options: TableDataReaderOptions): pg.ClientConfig {
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
  checkOptionalInteger(options.recordsPerShard, 'options.recordsPerShard', 10_000, 1);
  checkOptionalInteger(options.pageSize, 'options.pageSize', 1000, 1, 1_000_000);
  return clientConfig;
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
