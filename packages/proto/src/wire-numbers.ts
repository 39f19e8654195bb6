/** Converts an int64 from the wire to a number, refusing values a double cannot hold exactly. */
export function toSafeNumber(value: bigint, name: string): number {
  const number = Number(value);
  if (!Number.isSafeInteger(number)) {
    throw new RangeError(`Expected a safe integer for ${name} but received ${value}`);
  }
  return number;
}

/** Converts a number to an int64 for the wire, refusing fractions and unsafe integers. */
export function toWireInt(value: number, name: string): bigint {
  if (!Number.isSafeInteger(value)) {
    throw new RangeError(`Expected a safe integer for ${name} but received ${String(value)}`);
  }
  return BigInt(value);
}
