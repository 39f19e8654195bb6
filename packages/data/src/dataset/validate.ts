/**
 * Argument checks of the public dataset API. One message format everywhere:
 * "Expected <what> for <name> but received <value>".
 */

/** Renders a received value for an error message: short, and with its type where that helps. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return `'${value.length > 40 ? `${value.slice(0, 40)}...` : value}' of type string`;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean') {
    return `${String(value)} of type ${typeof value}`;
  }
  if (value === null) return 'null';
  if (value === undefined) return 'undefined';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (typeof value === 'function') return 'a function';
  return `an object (${Object.prototype.toString.call(value).slice(8, -1)})`;
}

/**
 * Throws the standard argument error: a `RangeError` for a number out of range, else a `TypeError`
 * (or as `kind` says, for a number of the wrong kind, e.g. where a function is expected).
 */
export function invalidArgument(what: string, name: string, value: unknown, kind?: 'type' | 'range'): never {
  const message = `Expected ${what} for ${name} but received ${describeValue(value)}`;
  if ((kind ?? (typeof value === 'number' ? 'range' : 'type')) === 'range') throw new RangeError(message);
  throw new TypeError(message);
}

/** An integer in `[min, max]` (default: any non-negative safe integer). */
export function expectInteger(value: unknown, name: string, min = 0, max = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range =
      max === Number.MAX_SAFE_INTEGER
        ? min === 0
          ? 'a non-negative integer'
          : min === 1
            ? 'a positive integer'
            : `an integer >= ${min}`
        : `an integer in [${min}, ${max}]`;
    invalidArgument(range, name, value);
  }
  return value;
}

/** Any safe integer (seeds may be negative). */
export function expectSeed(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    invalidArgument('a safe integer', name, value);
  return value;
}

/** A function. */
export function expectFunction<F>(value: F, name: string): F {
  if (typeof value !== 'function') invalidArgument('a function', name, value, 'type');
  return value;
}

/** A finite dataset length (the operation cannot work on an infinite dataset). */
export function expectFinite(length: number, name: string): number {
  if (!Number.isFinite(length)) invalidArgument('a dataset of finite length', name, length);
  return length;
}
