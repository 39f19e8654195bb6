/**
 * Argument checks for the public API, with one message format:
 * "Expected <what> for <name> but received <value>". Wrong types throw TypeError, values of the right
 * type outside their range throw RangeError. The addon trusts what passes these checks.
 */

/** Describes a received value for an error message: short, and never the whole of a big value. */
export function describeValue(value: unknown): string {
  if (typeof value === 'string')
    return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}...` : value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value === null || typeof value !== 'object') {
    return typeof value === 'function' ? 'a function' : String(value);
  }
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) {
    return `a ${value.constructor.name} of ${value.byteLength} bytes`;
  }
  const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
  return typeof name === 'string' && name !== 'Object' ? `an instance of ${name}` : 'an object';
}

/** Builds the standard message. */
export function expectedMessage(what: string, name: string, value: unknown): string {
  return `Expected ${what} for ${name} but received ${describeValue(value)}`;
}

/** Checks that `value` is a safe integer in `[min, max]`. */
export function checkInteger(value: unknown, name: string, min: number, max: number): number {
  const what =
    max === Number.MAX_SAFE_INTEGER
      ? min === 0
        ? 'a non-negative integer'
        : `an integer >= ${min}`
      : `an integer between ${min} and ${max}`;
  if (typeof value !== 'number') throw new TypeError(expectedMessage(what, name, value));
  if (!Number.isSafeInteger(value) || value < min || value > max) {
    throw new RangeError(expectedMessage(what, name, value));
  }
  return value;
}

/** Checks that `value` is one of `choices` (strings). */
export function checkOneOf<T extends string>(value: unknown, name: string, choices: readonly T[]): T {
  if (typeof value === 'string' && (choices as readonly string[]).includes(value)) return value as T;
  const what = `one of ${choices.map((c) => `'${c}'`).join(', ')}`;
  throw typeof value === 'string'
    ? new RangeError(expectedMessage(what, name, value))
    : new TypeError(expectedMessage(what, name, value));
}

/** Checks that `value` is a non-empty string. */
export function checkPath(value: unknown, name: string): string {
  if (typeof value !== 'string' || value === '') {
    throw new TypeError(expectedMessage('a non-empty string', name, value));
  }
  return value;
}

/**
 * Checks that `value` is undefined or a plain options object with only `allowed` keys, so a typo
 * such as `maxChunkSize` fails loudly instead of being ignored.
 */
export function checkOptions(
  value: unknown,
  name: string,
  allowed: readonly string[],
): Record<string, unknown> {
  if (value === undefined) return {};
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    throw new TypeError(expectedMessage('an object', name, value));
  }
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new TypeError(expectedMessage(`one of ${allowed.join(', ')}`, `a key of ${name}`, key));
    }
  }
  return value as Record<string, unknown>;
}

/** Checks that `value` is a Uint8Array (a Buffer is one) or a string. */
export function checkRecord(value: unknown, name: string): Uint8Array | string {
  if (value instanceof Uint8Array || typeof value === 'string') return value;
  throw new TypeError(expectedMessage('a Uint8Array or a string', name, value));
}
