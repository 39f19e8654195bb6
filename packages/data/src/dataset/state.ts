import type { JsonObject, JsonValue } from '../protocols.js';
import { DatasetError } from './errors.js';

/**
 * Readers for iterator states. A state that does not have the shape its iterator writes is a
 * `DatasetError` with code `ERR_BAD_STATE` naming the iterator and the key.
 */
function badState(owner: string, key: string, expected: string, value: unknown): never {
  throw new DatasetError(
    'ERR_BAD_STATE',
    `Expected ${expected} for ${owner} state key '${key}' but received ${JSON.stringify(value) ?? 'undefined'}`,
  );
}

/** The state itself must be a plain object. */
export function expectStateObject(state: unknown, owner: string): JsonObject {
  if (typeof state !== 'object' || state === null || Array.isArray(state)) {
    throw new DatasetError(
      'ERR_BAD_STATE',
      `Expected a state object for ${owner} but received ${JSON.stringify(state) ?? 'undefined'}`,
    );
  }
  return state as JsonObject;
}

/** A non-negative safe integer under `key`. */
export function stateCount(state: JsonObject, key: string, owner: string): number {
  const value = state[key];
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    badState(owner, key, 'a non-negative integer', value);
  }
  return value;
}

/** A nested object (a parent's state) under `key`. */
export function stateObject(state: JsonObject, key: string, owner: string): JsonObject {
  const value = state[key];
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    badState(owner, key, 'an object', value);
  return value;
}

/** An array of exactly `length` items under `key`. */
export function stateArray(state: JsonObject, key: string, owner: string, length: number): JsonValue[] {
  const value = state[key];
  if (!Array.isArray(value) || value.length !== length)
    badState(owner, key, `an array of length ${length}`, value);
  return value;
}

/** A boolean under `key`. */
export function stateBoolean(state: JsonObject, key: string, owner: string): boolean {
  const value = state[key];
  if (typeof value !== 'boolean') badState(owner, key, 'a boolean', value);
  return value;
}

/** A deep copy of a JSON state, so a caller mutating what it was given cannot reach our internals. */
export function copyState<S extends JsonValue>(state: S): S {
  return structuredClone(state);
}
