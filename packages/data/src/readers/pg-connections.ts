import pg from 'pg';
import { DataReaderError } from './errors.js';
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

  /** One query with parameters added by `build`, rows as arrays, retried after a connection error. */
  query<R extends unknown[]>(session: PgSession, what: string, build: (p: PgParams) => { text: string }) {
    const params = new PgParams();
    const { text } = build(params);
    return this.retrying(session, what, (client) =>
      client.query<R>({ text, values: params.values, rowMode: 'array' } as pg.QueryArrayConfig),
    );
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
        session.client ??= await this.#acquire();
        return await work(session.client);
      } catch (error) {
        if (session.client !== undefined) {
          this.#broken.add(session.client);
          this.release(session);
        }
        if (error instanceof DataReaderError) throw error;
        if (!isConnectionError(error)) {
          throw new DataReaderError(
            'QUERY_FAILED',
            `${what}: ${(error as Error).message} (${errorCodeOf(error)})`,
            error,
          );
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

  async #acquire(): Promise<pg.Client> {
    if (this.#closed) throw new DataReaderError('CLOSED', 'the reader is closed');
    const idle = this.#idle;
    this.#idle = undefined;
    if (idle !== undefined && !this.#broken.has(idle)) return idle;
    idle?.end().catch(noop);
    const client = new pg.Client(this.#config);
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
