import { invalidArgument } from '@edl/common';

/** Checks that `value` is a Uint8Array (a Buffer is one) or a string (written as UTF-8). */
export function checkRecord(value: unknown, name: string): Uint8Array | string {
  if (value instanceof Uint8Array || typeof value === 'string') return value;
  invalidArgument('a Uint8Array or a string', name, value, 'type');
}
