import type pg from 'pg';
import { DataReaderError } from './errors.js';
import { loadPg } from './pg-module.js';
import { backoffMs, errorCodeOf, isConnectionError, sleep } from './pg-retry.js';

const noop = (): void => {};

/** The connection one piece of work holds across its queries (replaced after a connection error). */
export interface PgSession {
  client: pg.Client | undefined;
}

/** Collects query parameters and hands out their `$n` placeholders. */
export class PgParams {
  readonly values: unknown[] = [];
  add(value: unknown): string {
    this.values.push(value);
    return `$${this.values.length}`;
  }
}

/**
 * The connections of one reader: at most one idle connection is kept for the next task, and every
 * query is retried on a new connection after a connection error, with exponential backoff, at most
 * `maxRetries` times in a row. Any other failure becomes `QUERY_FAILED` at once.
 */
export class PgConnections {
  readonly maxRetries: number;
  readonly retryDelayMs: number;
  readonly #config: pg.ClientConfig;
  readonly #broken = new WeakSet<pg.Client>();
  #idle: pg.Client | undefined;
  #closed = false;

  constructor(config: pg.ClientConfig, maxRetries: number, retryDelayMs: number) {
    this.#config = config;
    this.maxRetries = maxRetries;
    this.retryDelayMs = retryDelayMs;
  }

  /** Runs `work` on a connection, running all of it again on a new connection after a connection error. */
  async withClient<T>(what: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    const session: PgSession = { client: undefined };
    try {
      return await this.retrying(session, what, work);
    } finally {
      this.release(session);
    }
  }

  /**
   * One query with parameters added by `build`, rows as arrays, retried after a connection error. It
   * runs in a READ ONLY transaction of its own that the reader ends with ROLLBACK, so nothing in the
   * query (raw `unsafeWhere` SQL included) can write or leave a session setting behind.
   */
  query<R extends unknown[]>(session: PgSession, what: string, build: (p: PgParams) => { text: string }) {
    const params = new PgParams();
    const { text } = build(params);
    return this.retrying(session, what, async (client) => {
      await runStatement(client, 'BEGIN TRANSACTION READ ONLY');
      const result = await client.query<R>({
        text,
        values: params.values,
        rowMode: 'array',
        queryMode: 'extended',
      } as pg.QueryArrayConfig);
      await runStatement(client, 'ROLLBACK');
      return result;
    });
  }

  /** Gives the session's connection back (kept idle if healthy and none is idle yet). */
  release(session: PgSession): void {
    const client = session.client;
    session.client = undefined;
    if (client === undefined) return;
    if (!this.#closed && this.#idle === undefined && !this.#broken.has(client)) {
      this.#idle = client;
    } else {
      client.end().catch(noop);
    }
  }

  /** Ends the idle connection; sessions in progress end theirs when released. Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    const idle = this.#idle;
    this.#idle = undefined;
    if (idle !== undefined) await idle.end().catch(noop);
  }

  /** Runs `work` with the session's connection, reconnecting and retrying after connection errors. */
  async retrying<T>(session: PgSession, what: string, work: (client: pg.Client) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        session.client ??= await this.#acquire(what);
        return await work(session.client);
      } catch (error) {
        if (session.client !== undefined) {
          this.#broken.add(session.client);
          this.release(session);
        }
        if (error instanceof DataReaderError) throw error;
        if (!isConnectionError(error)) {
          throw queryFailed(what, error);
        }
        if (attempt >= this.maxRetries) {
          throw new DataReaderError(
            'CONNECTION_LOST',
            `${what}: connection lost and ${attempt} retries failed; last error: ${(error as Error).message} (${errorCodeOf(error)})`,
            error,
          );
        }
        await sleep(backoffMs(attempt, this.retryDelayMs));
      }
    }
  }

  async #acquire(what: string): Promise<pg.Client> {
    if (this.#closed) throw new DataReaderError('CLOSED', 'the reader is closed');
    const idle = this.#idle;
    this.#idle = undefined;
    if (idle !== undefined && !this.#broken.has(idle)) return idle;
    idle?.end().catch(noop);
    // pg loads with the first connection (see loadPg).
    const { Client } = await loadPg(what);
    // Closed while pg loaded: no connection is opened for a closed reader.
    if (this.#closed) throw new DataReaderError('CLOSED', 'the reader is closed');
    const client = new Client(this.#config);
    // A connection that drops while idle emits 'error'; without a listener that would crash the
    // process. The failure then surfaces as the next query's error, which is retried.
    client.on('error', () => this.#broken.add(client));
    try {
      await client.connect();
    } catch (error) {
      client.end().catch(noop);
      throw error;
    }
    return client;
  }
}

/**
 * Runs one statement through the extended query protocol (Parse/Bind/Execute), which the server
 * refuses to run as more than one statement, whatever the text holds.
 */
export function runStatement<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.Client,
  text: string,
  values: readonly unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return client.query<R>({ text, values: [...values], queryMode: 'extended' } as pg.QueryConfig);
}

/**
 * SQLSTATE classes whose server messages are about the query's text or the session, never about row
 * values: 08 connection, 0A feature not supported, 25 transaction state (e.g. read-only), 28
 * authorization, 3D/3F missing database/schema, 42 syntax or access rule (unknown column, permission
 * denied), 53 resources, 57 operator intervention (cancelled, shutting down).
 */
const MESSAGE_SAFE_CLASSES = new Set(['08', '0A', '25', '28', '3D', '3F', '42', '53', '57']);

/**
 * `QUERY_FAILED` for a query PostgreSQL rejected. Messages of other classes (22 data exception,
 * P0 raised by a function, ...) can quote values a query read, possibly from a table a filter named,
 * so they are replaced by the SQLSTATE alone and the server's error is not kept as the cause.
 */
export function queryFailed(what: string, error: unknown): DataReaderError {
  const code = errorCodeOf(error);
  if (/^[0-9A-Z]{5}$/.test(code) && !MESSAGE_SAFE_CLASSES.has(code.slice(0, 2))) {
    return new DataReaderError(
      'QUERY_FAILED',
      `${what}: the server rejected the query with SQLSTATE ${code} (its message is not shown, as it can quote row values)`,
    );
  }
  return new DataReaderError('QUERY_FAILED', `${what}: ${(error as Error).message} (${code})`, error);
}
