import type pg from 'pg';
import type { Shard } from '../protocols.js';
import { DataReaderError } from './errors.js';
import { PgParams, runStatement } from './pg-connections.js';

/** What a shard name holds: the first record's number and the key range `(after, upTo]`. */
export interface ShardBounds {
  readonly start: number;
  /** Exclusive lower bound as key text; null: from the first row. */
  readonly after: string | null;
  /** Inclusive upper bound as key text; null: to the last row. */
  readonly upTo: string | null;
}

/** The rows a table reader reads, as SQL: where from, which filters, ordered by which key. */
export interface TableSelection {
  /** The table's quoted, schema-qualified name. */
  readonly qualified: string;
  /** What queries read FROM: the table, or a subquery of it that applies `unsafeWhere`. */
  readonly source: string;
  /** The key column, quoted. */
  readonly key: string;
  /** Whether the catalog says the key is unique (else shard planning checks for duplicates). */
  readonly keyUnique: boolean;
  /** The structured filters as SQL with their values added to `p`; '' when there are none. */
  whereSql(p: PgParams): string;
}

const noop = (): void => {};

/**
 * Plans the shards of `recordsPerShard` rows (the last may be shorter; none for an empty result):
 * counts the rows and, in the same REPEATABLE READ snapshot, takes the key of every
 * `recordsPerShard`-th row as a shard boundary. Fails with BAD_KEY when the key is NULL or
 * repeated among the selected rows.
 */
export async function planShards(
  client: pg.Client,
  selection: TableSelection,
  recordsPerShard: number,
): Promise<Shard[]> {
  const { key, source, qualified } = selection;
  // Ended by ROLLBACK: nothing was written, and any setting a query changed is undone.
  await runStatement(client, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  try {
    const checkDuplicates = !selection.keyUnique;
    const p = new PgParams();
    const where = selection.whereSql(p);
    const counts = await runStatement<{ total: string; nulls: string; duplicates: string | null }>(
      client,
      `SELECT count(*) AS total, count(*) FILTER (WHERE ${key} IS NULL) AS nulls, ` +
        `${checkDuplicates ? `count(${key}) - count(DISTINCT ${key})` : 'NULL'} AS duplicates ` +
        `FROM ${source}${where === '' ? '' : ` WHERE ${where}`}`,
      p.values,
    );
    const row = counts.rows[0]!;
    const nulls = Number(row.nulls);
    const duplicates = row.duplicates === null ? 0 : Number(row.duplicates);
    if (nulls > 0 || duplicates > 0) {
      throw new DataReaderError(
        'BAD_KEY',
        `key column ${key} of ${qualified} has ${nulls} NULL and ${duplicates} duplicate values among the ` +
          'selected rows; keyset reading needs a unique, non-NULL key (set keyColumn)',
      );
    }
    const total = Number(row.total);
    const per = recordsPerShard;
    let boundaries: string[] = [];
    if (total > per) {
      const q = new PgParams();
      const filter = selection.whereSql(q);
      boundaries = (
        await runStatement<{ k: string }>(
          client,
          `SELECT s.k::text AS k FROM (SELECT ${key} AS k, row_number() OVER (ORDER BY ${key}) AS rn ` +
            `FROM ${source} WHERE ${key} IS NOT NULL${filter === '' ? '' : ` AND ${filter}`}) s ` +
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
      shards.push({ name: shardName(qualified, bounds), start, count: Math.min(per, total - start) });
    }
    return shards;
  } catch (error) {
    await runStatement(client, 'ROLLBACK').catch(noop);
    throw error;
  }
}

/** The SQL condition of the key range `(after, upTo]`, its bounds added to `p` as parameters. */
export function keyRangeSql(key: string, after: string | null, upTo: string | null, p: PgParams): string {
  const parts: string[] = [];
  parts.push(after === null ? `${key} IS NOT NULL` : `${key} > ${p.add(after)}`);
  if (upTo !== null) parts.push(`${key} <= ${p.add(upTo)}`);
  return parts.join(' AND ');
}

/** `<qualified>:{"start":…,"after":…,"upTo":…}`: a name any process can read the bounds back from. */
export function shardName(qualified: string, bounds: ShardBounds): string {
  return `${qualified}:${JSON.stringify({ start: bounds.start, after: bounds.after, upTo: bounds.upTo })}`;
}

/** The bounds in a shard name of table `qualified`; UNKNOWN_SHARD for any other name. */
export function parseShardName(qualified: string, name: string): ShardBounds {
  const prefix = `${qualified}:`;
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
    `shard ${JSON.stringify(name)} is not a shard of table ${qualified}`,
  );
}
