import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { RecordRange } from '../protocols.js';
import { checkRange } from './check-range.js';
import { DataReaderError } from './errors.js';

/** Code-unit order of paths: shards are listed the same way on every machine and locale. */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * The regular files directly in `dataDir` whose names `accept` takes (hidden files skipped).
 * `IO` when the directory cannot be listed, `NO_FILES` (with `noFiles` as the message) when none.
 */
export async function listDataFiles(
  dataDir: string,
  accept: (name: string) => boolean,
  noFiles: string,
): Promise<string[]> {
  let names: string[];
  try {
    names = await readdir(dataDir);
  } catch (error) {
    throw new DataReaderError('IO', `cannot list ${dataDir}: ${(error as Error).message}`, error);
  }
  const files: string[] = [];
  for (const name of names) {
    if (name.startsWith('.') || !accept(name)) continue;
    const path = join(dataDir, name);
    if ((await stat(path)).isFile()) files.push(path);
  }
  if (files.length === 0) throw new DataReaderError('NO_FILES', noFiles);
  return files;
}

/** Checks a task's range and that its shard is one of the reader's files (`UNKNOWN_SHARD`). */
export function checkFileRange(
  range: RecordRange,
  owns: (path: string) => boolean,
  files: string,
): { shardName: string; start: number; end: number } {
  const checked = checkRange(range);
  if (!owns(checked.shardName)) {
    throw new DataReaderError(
      'UNKNOWN_SHARD',
      `shard ${JSON.stringify(checked.shardName)} is not one of the files of this reader (${files})`,
    );
  }
  return checked;
}

/** `OUT_OF_RANGE` unless `[start, end)` lies within the `numRecords` records of the file. */
export function checkWithinFile(shardName: string, start: number, end: number, numRecords: number): void {
  if (end > numRecords) {
    throw new DataReaderError(
      'OUT_OF_RANGE',
      `records [${start}, ${end}) of ${shardName}, which has ${numRecords} records`,
    );
  }
}
