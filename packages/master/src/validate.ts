/** Argument checks at the public boundary, with one message format. */

export function describeValue(value: unknown): string {
  if (typeof value === 'string') return `string '${value}'`;
  if (value === null) return 'null';
  if (Array.isArray(value)) return `array of length ${value.length}`;
  return `${typeof value} ${String(value)}`;
}

export function checkInteger(
  value: unknown,
  name: string,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `in [${min}, ${max}]`;
    throw new RangeError(`Expected an integer ${range} for ${name} but received ${describeValue(value)}`);
  }
  return value;
}

export function checkNumber(
  value: unknown,
  name: string,
  min: number,
  max = Number.POSITIVE_INFINITY,
): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max) {
    const range = max === Number.POSITIVE_INFINITY ? `>= ${min}` : `in [${min}, ${max}]`;
    throw new RangeError(
      `Expected a finite number ${range} for ${name} but received ${describeValue(value)}`,
    );
  }
  return value;
}

export function checkOneOf<T extends string>(value: unknown, name: string, allowed: readonly T[]): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new TypeError(
      `Expected one of ${allowed.map((a) => `'${a}'`).join(', ')} for ${name} but received ${describeValue(value)}`,
    );
  }
  return value as T;
}

export function checkString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`Expected a non-empty string for ${name} but received ${describeValue(value)}`);
  }
  return value;
}
