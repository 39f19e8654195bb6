import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Name endings of readers' sidecar files (indexes next to the data they index, in the spirit of
 * DALI's `tfrecord2idx`): listings never return them as data.
 */
export const SIDECAR_SUFFIXES: readonly string[] = ['.idx', '.index'];

/**
 * The URL scheme of `location` in lower case (`s3`, `https`, `file`), or undefined for a plain path.
 * One letter is a Windows drive (`C:\data`), not a scheme.
 */
export function schemeOf(location: string): string | undefined {
  const scheme = /^([a-z][a-z0-9+.-]*):/i.exec(location)?.[1];
  return scheme === undefined || scheme.length === 1 ? undefined : scheme.toLowerCase();
}

/**
 * How readers name a location: a plain path resolved against the current directory, a `file:` URL
 * as its absolute path, any other URL unchanged.
 */
export function normalizeLocation(location: string): string {
  const scheme = schemeOf(location);
  if (scheme === undefined) return resolve(location);
  return scheme === 'file' ? fileURLToPath(location) : location;
}

/** Whether a listing returns an entry of this name: not hidden (`.` first), not a sidecar. */
export function isListedName(name: string): boolean {
  return !name.startsWith('.') && !SIDECAR_SUFFIXES.some((suffix) => name.endsWith(suffix));
}

/** Code-unit order of locations: objects are listed the same way on every machine and locale. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
