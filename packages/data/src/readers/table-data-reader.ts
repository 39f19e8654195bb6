import { checkOptionalInteger } from '@edl/common';
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
import { PgConnections, type PgParams, type PgSession } from './pg-connections.js';
import { quoteIdentifier, quoteQualified } from './sql-identifier.js';
import { type ResolvedTable, resolveTable } from './table-catalog.js';
import { checkFilters, filterSql, type TableFilter } from './table-filter.js';
import { checkTableReaderOptions, type TableDataReaderOptions, type TableRow } from './table-options.js';
import { keyRangeSql, parseShardName, planShards, type TableSelection } from './table-shards.js';

export type { FilterOp, FilterValue, TableFilter } from './table-filter.js';
export type { PgConnectionOptions, TableDataReaderOptions, TableRow } from './table-options.js';

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
    const clientConfig = checkTableReaderOptions(options);
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
    return this.#connections.withClient(`creating shards of ${this.#qualified}`, (client) =>
      planShards(client, this.#selection(), this.#recordsPerShard),
    );
  }

  /**
   * Yields the rows `[range.start, range.end)` of the shard `range.shardName`, in key order, as plain
   * objects of the selected columns.
   */
  async *readRecords(range: RecordRange): AsyncGenerator<TableRow> {
    this.#checkOpen();
    const { shardName, start, end } = checkRange(range);
    const bounds = parseShardName(this.#qualified, shardName);
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
              `SELECT s.k::text FROM (SELECT ${key} AS k FROM ${this.#source} WHERE ${keyRangeSql(key, after, bounds.upTo, p)}` +
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
              `SELECT ${selectList} FROM ${this.#source} WHERE ${keyRangeSql(key, lower, bounds.upTo, p)}` +
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

  #selection(): TableSelection {
    return {
      qualified: this.#qualified,
      source: this.#source,
      key: quoteIdentifier(this.#table.key.name),
      keyUnique: this.#table.key.unique,
      whereSql: (p) => this.#whereSql(p),
    };
  }

  #checkOpen(): void {
    if (this.#closed) throw new DataReaderError('CLOSED', `the reader of ${this.#qualified} is closed`);
  }
}
