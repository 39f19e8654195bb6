import { expectedMessage } from '@edl/common';
import { DataReaderError } from './errors.js';

/** The type of a CSV column: what its fields become in the records the text reader yields. */
export type CsvColumnType = 'float32' | 'int32' | 'string';

const COLUMN_TYPES: readonly CsvColumnType[] = ['float32', 'int32', 'string'];

/** A CSV field as a number: true for '1', '-2.5', '1e-3'; false for '', 'abc', 'NaN'. */
export function isNumericField(field: string): boolean {
  return field.trim() !== '' && Number.isFinite(Number(field));
}

/**
 * True when the first of `rows` looks like a header and the rest like data: the first row has a
 * field that is not a number, and every field of the other rows (at least one) is a number.
 */
export function looksLikeHeader(rows: readonly (readonly string[])[]): boolean {
  const [first, ...rest] = rows;
  if (first === undefined || rest.length === 0) return false;
  if (first.every(isNumericField)) return false;
  return rest.every((row) => row.length === first.length && row.every(isNumericField));
}

/** Column types inferred from sample data rows: `float32` where every value is a number, else `string`. */
export function inferColumnTypes(rows: readonly (readonly string[])[], width: number): CsvColumnType[] {
  const types: CsvColumnType[] = [];
  for (let c = 0; c < width; c++) {
    const numeric = rows.length > 0 && rows.every((row) => isNumericField(row[c] ?? ''));
    types.push(numeric ? 'float32' : 'string');
  }
  return types;
}

/**
 * The column types of `columns` (column name, or column number when the file has no header, to
 * type), in column order; unnamed columns stay strings. Throws a TypeError for an unknown type and
 * a RangeError for a column the file lacks.
 */
export function columnTypesOf(
  columns: Readonly<Record<string, unknown>>,
  names: readonly string[] | undefined,
  width: number,
): CsvColumnType[] {
  const types: CsvColumnType[] = new Array<CsvColumnType>(width).fill('string');
  for (const [key, type] of Object.entries(columns)) {
    if (!COLUMN_TYPES.includes(type as CsvColumnType)) {
      throw new TypeError(
        expectedMessage(COLUMN_TYPES.map((t) => `'${t}'`).join(' | '), `options.columns.${key}`, type),
      );
    }
    let at = names?.indexOf(key) ?? -1;
    if (at < 0 && /^\d+$/.test(key)) at = Number(key);
    if (at < 0 || at >= width) {
      const known = names === undefined ? `columns 0 to ${width - 1}` : `columns ${names.join(', ')}`;
      throw new RangeError(
        `Expected a column of the file for options.columns but received '${key}' (it has ${known})`,
      );
    }
    types[at] = type as CsvColumnType;
  }
  return types;
}

/** A CSV field of a record parsed to its column's type. */
export type CsvField = string | number;

/**
 * Converts the fields of one record to `types`; a field that is not a number in a numeric column
 * fails with `BAD_VALUE`, naming the file, record number (0-based, header excluded) and column.
 */
export function convertFields(
  fields: string[],
  types: readonly CsvColumnType[],
  names: readonly string[] | undefined,
  path: string,
  record: number,
): CsvField[] {
  const out: CsvField[] = fields;
  for (let c = 0; c < fields.length && c < types.length; c++) {
    const type = types[c];
    if (type === 'string') continue;
    const field = fields[c] as string;
    const value = Number(field);
    if (field.trim() === '' || !Number.isFinite(value) || (type === 'int32' && !Number.isInteger(value))) {
      throw new DataReaderError(
        'BAD_VALUE',
        `record ${record} of ${path}: column ${names?.[c] ?? c} is ${type} but holds ${JSON.stringify(field)}`,
      );
    }
    out[c] = type === 'int32' ? value | 0 : value;
  }
  return out;
}
