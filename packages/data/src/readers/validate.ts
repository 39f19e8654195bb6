/** Argument checks at the public boundary of the readers, with one message format. */

/** Renders a received value for an error message: strings quoted, objects as short JSON. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}...` : value);
  if (typeof value === 'function') return `function ${value.name || '(anonymous)'}`;
  if (typeof value === 'bigint') return `${value}n`;
  if (value === undefined || typeof value === 'number' || typeof value === 'boolean') return String(value);
  try {
    const json = JSON.stringify(value);
    return json.length > 200 ? `${json.slice(0, 200)}...` : json;
  } catch {
    return Object.prototype.toString.call(value);
  }
}

/** "Expected <what> for <name> but received <value>". */
export function expectedMessage(what: string, name: string, value: unknown): string {
  return `Expected ${what} for ${name} but received ${describeValue(value)}`;
}

/** Throws a TypeError unless `value` is a non-empty string. */
export function checkNonEmptyString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '')
    throw new TypeError(expectedMessage('a non-empty string', name, value));
  return value;
}

/**
 * Throws unless `value` is an integer in [min, max]; `undefined` gives `fallback`, or throws when
 * there is no fallback (a required integer).
 */
export function checkInteger(
  value: unknown,
  name: string,
  fallback: number | undefined,
  min = 1,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value)) {
    throw new TypeError(expectedMessage(`an integer in [${min}, ${max}]`, name, value));
  }
  if (value < min || value > max)
    throw new RangeError(expectedMessage(`an integer in [${min}, ${max}]`, name, value));
  return value;
}

/** Throws a TypeError unless `value` is a boolean; `undefined` gives `fallback`. */
export function checkBoolean(value: unknown, name: string, fallback: boolean): boolean {
  if (value === undefined) return fallback;
  if (typeof value !== 'boolean') throw new TypeError(expectedMessage('a boolean', name, value));
  return value;
}

/** Throws a TypeError unless `value` is a plain object (not null, not an array). */
export function checkObject(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(expectedMessage('an object', name, value));
  }
  return value as Record<string, unknown>;
}

/** Throws unless `range` is a valid record range object. */
export function checkRange(range: unknown): { shardName: string; start: number; end: number } {
  const r = checkObject(range, 'range');
  const shardName = checkNonEmptyString(r.shardName, 'range.shardName');
  const start = checkInteger(r.start, 'range.start', undefined, 0);
  const end = checkInteger(r.end, 'range.end', undefined, 0);
  if (end < start)
    throw new RangeError(expectedMessage(`an integer >= range.start (${start})`, 'range.end', end));
  return { shardName, start, end };
}
