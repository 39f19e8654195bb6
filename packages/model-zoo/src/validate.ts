function describe(value: unknown): string {
  return typeof value === 'string' ? `'${value}'` : String(value);
}

/** Throws the repo's RangeError unless `value` is an integer >= `min`. */
export function checkInteger(value: unknown, name: string, min: number): number {
  if (!Number.isSafeInteger(value) || (value as number) < min) {
    throw new RangeError(`Expected an integer >= ${min} for ${name} but received ${describe(value)}`);
  }
  return value as number;
}

/** Throws the repo's TypeError unless `value` is a non-empty string. */
export function checkString(value: unknown, name: string): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new TypeError(`Expected a non-empty string for ${name} but received ${describe(value)}`);
  }
  return value;
}
