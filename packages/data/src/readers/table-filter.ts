import { expectedMessage } from '@edl/common';
import type { PgParams } from './pg-connections.js';
import { quoteIdentifier } from './sql-identifier.js';

/** A scalar a filter compares with; it always travels as a query parameter, never as SQL text. */
export type FilterValue = string | number | boolean;

/** The comparison operators a {@link TableFilter} may use (case-insensitive). */
export const FILTER_OPS = [
  '=',
  '!=',
  '<>',
  '<',
  '<=',
  '>',
  '>=',
  'in',
  'not in',
  'like',
  'not like',
  'ilike',
  'not ilike',
  'is null',
  'is not null',
] as const;

/** One of {@link FILTER_OPS}. */
export type FilterOp = (typeof FILTER_OPS)[number];

/**
 * One condition of a table reader's `where`: `column op value`. The column is an exact name, quoted
 * as an identifier; `value` is a query parameter compared as the column's type by the server (a
 * non-empty array for `in` / `not in`, absent for `is null` / `is not null`).
 */
export interface TableFilter {
  readonly column: string;
  readonly op: FilterOp;
  readonly value?: FilterValue | readonly FilterValue[];
}

const OPS = new Set<string>(FILTER_OPS);
const LIST_OPS = new Set<string>(['in', 'not in']);
const NULL_OPS = new Set<string>(['is null', 'is not null']);

function isScalar(value: unknown): value is FilterValue {
  return (
    typeof value === 'string' ||
    typeof value === 'boolean' ||
    (typeof value === 'number' && Number.isFinite(value))
  );
}

/**
 * Checks `options.where`: an array of `{ column, op, value }`. A string (raw SQL) is refused with a
 * pointer to `unsafeWhere`, so that old SQL filters are never silently reinterpreted.
 */
export function checkFilters(value: unknown, name: string): readonly TableFilter[] {
  if (typeof value === 'string') {
    throw new TypeError(
      `${expectedMessage('an array of filters [{ column, op, value }]', name, value)} ` +
        '(raw SQL is accepted only as options.unsafeWhere)',
    );
  }
  if (!Array.isArray(value)) {
    throw new TypeError(expectedMessage('an array of filters [{ column, op, value }]', name, value));
  }
  return value.map((item: unknown, i) => {
    const at = `${name}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new TypeError(expectedMessage('a filter { column, op, value }', at, item));
    }
    const f = item as Record<string, unknown>;
    const unknownKeys = Object.keys(f).filter((k) => k !== 'column' && k !== 'op' && k !== 'value');
    if (unknownKeys.length > 0) {
      throw new TypeError(expectedMessage('only the keys column, op and value', at, item));
    }
    if (typeof f.column !== 'string' || f.column === '' || f.column.includes('\0')) {
      throw new TypeError(expectedMessage('a column name', `${at}.column`, f.column));
    }
    const op = typeof f.op === 'string' ? f.op.trim().toLowerCase().replace(/\s+/g, ' ') : f.op;
    if (typeof op !== 'string' || !OPS.has(op)) {
      throw new TypeError(expectedMessage(`one of ${FILTER_OPS.join(', ')}`, `${at}.op`, f.op));
    }
    if (NULL_OPS.has(op)) {
      if (f.value !== undefined) throw new TypeError(expectedMessage('no value', `${at}.value`, f.value));
      return { column: f.column, op: op as FilterOp };
    }
    if (LIST_OPS.has(op)) {
      const list = f.value;
      if (!Array.isArray(list) || list.length === 0 || !list.every(isScalar)) {
        throw new TypeError(
          expectedMessage('a non-empty array of strings, numbers or booleans', `${at}.value`, list),
        );
      }
      return { column: f.column, op: op as FilterOp, value: [...list] };
    }
    if (!isScalar(f.value)) {
      throw new TypeError(
        expectedMessage(
          'a string, finite number or boolean (use "is null" for NULL)',
          `${at}.value`,
          f.value,
        ),
      );
    }
    return { column: f.column, op: op as FilterOp, value: f.value };
  });
}

/** `filters` as SQL conditions joined by AND; every value becomes a parameter of `p`. */
export function filterSql(filters: readonly TableFilter[], p: PgParams): string {
  return filters
    .map((f) => {
      const column = quoteIdentifier(f.column);
      switch (f.op) {
        case 'is null':
          return `${column} IS NULL`;
        case 'is not null':
          return `${column} IS NOT NULL`;
        case 'in':
          return `${column} = ANY(${p.add(toParam(f.value))})`;
        case 'not in':
          return `${column} <> ALL(${p.add(toParam(f.value))})`;
        default:
          return `${column} ${f.op.toUpperCase()} ${p.add(toParam(f.value))}`;
      }
    })
    .join(' AND ');
}

function toParam(value: TableFilter['value']): unknown {
  // Numbers and booleans travel as text and are read as the column's type by the server.
  return Array.isArray(value) ? value.map(String) : String(value);
}

/**
 * Checks raw SQL given as `unsafeWhere` before it is sent: no `;` and parentheses that never close
 * more than they open, outside string literals, quoted identifiers, dollar quotes and comments. It
 * is a first line only: the server still parses every query as one statement (extended protocol)
 * inside a READ ONLY transaction that the reader, not the SQL, ends.
 */
export function checkUnsafeWhere(sql: unknown, name: string): string {
  if (typeof sql !== 'string' || sql.trim() === '' || sql.includes('\0')) {
    throw new TypeError(expectedMessage('a non-empty SQL boolean expression', name, sql));
  }
  const refuse = (why: string): never => {
    throw new TypeError(
      `${expectedMessage('one SQL boolean expression (no ";", balanced parentheses)', name, sql)}: it ${why}`,
    );
  };
  let depth = 0;
  let i = 0;
  const n = sql.length;
  while (i < n) {
    const c = sql[i]!;
    const next = sql[i + 1];
    if (c === '-' && next === '-') {
      const end = sql.indexOf('\n', i);
      i = end === -1 ? n : end + 1;
    } else if (c === '/' && next === '*') {
      // Block comments nest in PostgreSQL.
      let nesting = 1;
      i += 2;
      while (i < n && nesting > 0) {
        const pair = sql.slice(i, i + 2);
        if (pair === '/*' || pair === '*/') {
          nesting += pair === '/*' ? 1 : -1;
          i += 2;
        } else {
          i += 1;
        }
      }
      if (nesting > 0) refuse('has an unterminated comment');
    } else if (c === "'" || c === '"') {
      // E'...' strings allow backslash escapes; a doubled quote is a quote in every kind.
      const escapes = c === "'" && i > 0 && (sql[i - 1] === 'E' || sql[i - 1] === 'e');
      i += 1;
      for (;;) {
        if (i >= n) refuse('has an unterminated quote');
        if (escapes && sql[i] === '\\') i += 2;
        else if (sql[i] === c && sql[i + 1] === c) i += 2;
        else if (sql[i] === c) break;
        else i += 1;
      }
      i += 1;
    } else if (c === '$' && !/[\w$]/.test(sql[i - 1] ?? ' ')) {
      const tag = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(i));
      if (tag === null) {
        i += 1;
      } else {
        const end = sql.indexOf(tag[0], i + tag[0].length);
        if (end === -1) refuse('has an unterminated dollar quote');
        i = end + tag[0].length;
      }
    } else if (c === ';') {
      refuse('holds a ";" outside quotes and comments');
    } else if (c === '(') {
      depth += 1;
      i += 1;
    } else if (c === ')') {
      depth -= 1;
      if (depth < 0) refuse('closes a parenthesis it did not open');
      i += 1;
    } else {
      i += 1;
    }
  }
  if (depth !== 0) refuse('leaves a parenthesis open');
  return sql;
}
