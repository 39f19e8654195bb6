import { AsyncLocalStorage } from 'node:async_hooks';
import { basename } from 'node:path';
import { byteSourceFor, normalizeLocation, type ObjectStat, StorageError } from '@edl/storage';
import type { RecordRange } from '../protocols.js';
import { checkRange } from './check-range.js';
import { DataReaderError } from './errors.js';

/** The listings made while one reader is created, by location (see {@link sharingListings}). */
const sharedListings = new AsyncLocalStorage<Map<string, Promise<ObjectStat[]>>>();
/** Calls of {@link sharingListings} in progress. */
let sharing = 0;

/**
 * Runs `create` (which picks and opens a reader) with its listings shared: a location listed to
 * choose the reader is not listed again by the reader's open, so an open of an `s3://` prefix costs
 * one LIST. The listings live as long as `create` runs; later reads list afresh.
 */
export async function sharingListings<T>(create: () => Promise<T>): Promise<T> {
  sharing++;
  try {
    return await sharedListings.run(new Map(), create);
  } finally {
    // An AsyncLocalStorage once run keeps Node's async and promise hooks on in the whole process,
    // a cost on every later promise and I/O callback (measured in docs/data-readers.md, "Reader
    // CPU"): it is turned off when no creation shares listings any more.
    if (--sharing === 0) sharedListings.disable();
  }
}

/** The objects at `location` through its byte source, listed once per {@link sharingListings} scope. */
export function listLocation(location: string): Promise<ObjectStat[]> {
  const shared = sharedListings.getStore();
  const listed = shared?.get(location);
  if (listed !== undefined) return listed;
  const listing = byteSourceFor(location).then((source) => source.list(location));
  // Each caller handles the failure; the shared promise itself must not be an unhandled rejection.
  listing.catch(() => {});
  shared?.set(location, listing);
  return listing;
}

/**
 * The data files directly in `dataDir` (a directory or key prefix, through its byte source) whose
 * names `accept` takes, in code-unit order of locations; hidden and sidecar files are never listed.
 * `IO` when the location cannot be listed or names a single object, `NO_FILES` (with `noFiles` as
 * the message) when none is left.
 */
export async function listDataFiles(
  dataDir: string,
  accept: (name: string) => boolean,
  noFiles: string,
): Promise<ObjectStat[]> {
  let objects: ObjectStat[];
  try {
    objects = await listLocation(dataDir);
  } catch (error) {
    throw new DataReaderError('IO', `cannot list ${dataDir}: ${storageReason(error)}`, error);
  }
  if (objects.length === 1 && objects[0]?.location === normalizeLocation(dataDir)) {
    throw new DataReaderError('IO', `cannot list ${dataDir}: it is a file, not a directory`);
  }
  const files = objects.filter((object) => accept(basename(object.location)));
  if (files.length === 0) throw new DataReaderError('NO_FILES', noFiles);
  return files;
}

/** Why a byte source failed, without its code and location (the caller names the location). */
export function storageReason(error: unknown): string {
  if (!(error instanceof StorageError)) return (error as Error).message;
  return error.cause instanceof Error ? error.cause.message : error.detail;
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
