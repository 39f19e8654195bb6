import type pg from 'pg';
import { DataReaderError } from './errors.js';
import { runStatement } from './pg-connections.js';
import { isConnectionError } from './pg-retry.js';
import { quoteQualified } from './sql-identifier.js';
import type { TableDataReaderOptions } from './table-options.js';

/** A table as the catalog describes it: its exact parts, the columns selected, and the key. */
export interface ResolvedTable {
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

/** Finds the table, its selected columns with their types, and its key column in the catalog. */
export async function resolveTable(
  client: pg.Client,
  options: TableDataReaderOptions,
): Promise<ResolvedTable> {
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
