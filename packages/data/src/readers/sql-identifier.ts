import { expectedMessage } from '@edl/common';

/**
 * Quotes one PostgreSQL identifier exactly as given: `"` + name with `"` doubled + `"`. Quoting always
 * (not only when needed) keeps case, spaces and keywords intact. A NUL cannot be in an identifier.
 */
export function quoteIdentifier(name: string): string {
  if (typeof name !== 'string' || name === '' || name.includes('\0')) {
    throw new TypeError(expectedMessage('a non-empty identifier without NUL characters', 'identifier', name));
  }
  return `"${name.replaceAll('"', '""')}"`;
}

/** Quotes each part of a qualified name (`schema.table`) and joins them with dots. */
export function quoteQualified(parts: readonly string[]): string {
  return parts.map(quoteIdentifier).join('.');
}
