/**
 * Argument checks at the public boundary of every package, with one message format (see
 * {@link expectedMessage}). A value of the wrong type throws a TypeError; a number of the right type
 * outside its range (or not an integer where one is expected) throws a RangeError.
 */
import { expectedMessage } from './describe-value.js';

/** Which error class an argument error is: `'type'` (TypeError) or `'range'` (RangeError). */
export type ArgumentErrorKind = 'type' | 'range';

/**
 * The standard argument error: a RangeError for a number, else a TypeError, unless `kind` says
 * otherwise (e.g. a number where a function is expected is a TypeError).
 */
export function argumentError(
  what: string,
  name: string,
  value: unknown,
  kind: ArgumentErrorKind = typeof value === 'number' ? 'range' : 'type',
): TypeError | RangeError {
  const message = expectedMessage(what, name, value);
  return kind === 'range' ? new RangeError(message) : new TypeError(message);
}

/** Throws {@link argumentError}. */
export function invalidArgument(what: string, name: string, value: unknown, kind?: ArgumentErrorKind): never {
  throw argumentError(what, name, value, kind);
}

/**
 * How an integer range reads in a message: `a non-negative integer`, `a positive integer`,
 * `an integer >= 5` (no upper bound) or `an integer in [0, 9]`.
 */
export function integerRange(min: number, max: number = Number.MAX_SAFE_INTEGER): string {
  if (max !== Number.MAX_SAFE_INTEGER) return `an integer in [${min}, ${max}]`;
  if (min === 0) return 'a non-negative integer';
  if (min === 1) return 'a positive integer';
  return `an integer >= ${min}`;
}

/** Returns `value` if it is a safe integer in `[min, max]`, else throws (see {@link integerRange}). */
export function checkInteger(
  value: unknown,
  name: string,
  min = 0,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    invalidArgument(integerRange(min, max), name, value);
  }
  return value;
}

/** Like {@link checkInteger}, but `undefined` gives `fallback`. */
export function checkOptionalInteger(
  value: unknown,
  name: string,
  fallback: number,
  min = 0,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  return value === undefined ? fallback : checkInteger(value, name, min, max);
}

/** Returns `value` if it is any safe integer (negative included, e.g. a seed). */
export function checkSafeInteger(value: unknown, name: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value))
    invalidArgument('a safe integer', name, value);
  return value;
}

/** Returns `value` if it is a finite number in `[min, max]`. */
export function checkNumber(
  value: unknown,
  name: string,
  min: number = Number.NEGATIVE_INFINITY,
  max: number = Number.POSITIVE_INFINITY,
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const range =
      max === Number.POSITIVE_INFINITY
        ? min === Number.NEGATIVE_INFINITY
          ? ''
          : ` >= ${min}`
        : min === Number.NEGATIVE_INFINITY
          ? ` <= ${max}`
          : ` in [${min}, ${max}]`;
    invalidArgument(`a finite number${range}`, name, value);
  }
  return value;
}

/** Returns `value` if it is a non-empty string. */
export function checkNonEmptyString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') invalidArgument('a non-empty string', name, value, 'type');
  return value;
}

/** Returns `value` if it is a boolean; `undefined` gives `fallback` when there is one. */
export function checkBoolean(value: unknown, name: string, fallback?: boolean): boolean {
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'boolean') invalidArgument('a boolean', name, value, 'type');
  return value;
}

/** Returns `value` if it is a function. */
export function checkFunction<F>(value: F, name: string): F {
  if (typeof value !== 'function') invalidArgument('a function', name, value, 'type');
  return value;
}

/** Returns `value` if it is a plain object (not null, not an array). */
export function checkObject(value: unknown, name: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    invalidArgument('an object', name, value, 'type');
  }
  return value as Record<string, unknown>;
}

/**
 * Returns `value` if it is undefined (as `{}`) or an options object with only `allowed` keys, so a
 * typo such as `maxChunkSize` fails loudly instead of being ignored.
 */
export function checkOptions(
  value: unknown,
  name: string,
  allowed: readonly string[],
): Record<string, unknown> {
  if (value === undefined) return {};
  const options = checkObject(value, name);
  for (const key of Object.keys(options)) {
    if (!allowed.includes(key)) invalidArgument(`one of ${allowed.join(', ')}`, `a key of ${name}`, key);
  }
  return options;
}

/**
 * Returns `value` if it is one of `choices`: a string that is not one is a RangeError, anything
 * else a TypeError.
 */
export function checkOneOf<T extends string>(value: unknown, name: string, choices: readonly T[]): T {
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
  invalidArgument(
    `one of ${choices.map((c) => `'${c}'`).join(', ')}`,
    name,
    value,
    typeof value === 'string' ? 'range' : 'type',
  );
}
