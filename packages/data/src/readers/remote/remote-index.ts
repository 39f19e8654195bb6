import { hasErrorCode } from '@edl/common';
import { decodeSidecarIndex, type SidecarIndex } from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';
import { DataReaderError } from '../errors.js';
import { storageReason } from '../file-shards.js';
import {
  type CompressedObject,
  type RequestCounter,
  walkRecordIOHeaders,
  walkTFRecordHeaders,
} from './header-walk.js';
import type { IndexCache } from './index-cache.js';

/**
 * Where a remote object's index came from: the local cache, the master (a worker pod's index
 * provider, set by `setRemoteIndexProvider`), its sidecar, a header walk, or (a GZIP/ZLIB TFRecord
 * object, which has no index) a count of its records by one decompressing pass.
 */
export type IndexOrigin = 'cache' | 'master' | 'sidecar' | 'header-walk' | 'stream-count';

/** How a remote object was indexed, and what it cost. */
export interface RemoteIndexReport {
  readonly origin: IndexOrigin;
  /**
   * Requests spent on the index: the sidecar's GET (and a HEAD before it when no listing named
   * the sidecar), or the header walk's GETs (and that HEAD, when it found no sidecar).
   */
  readonly requests: number;
  /** Why a sidecar that was present was not used (another size, damaged), if one was refused. */
  readonly sidecarRefused?: string;
}

/** A loaded index and its report. */
export interface RemoteIndex {
  readonly index: SidecarIndex;
  readonly report: RemoteIndexReport;
}

/** The suffix of a sidecar index: `<data file>.idx`. */
export const SIDECAR_SUFFIX = '.idx';

/**
 * The index of a remote object, cheapest first: the local cache (keyed by URL and ETag, no
 * request), the master's cache (a worker pod's index provider: one call to the master, no storage
 * request), the sidecar `<object>.idx` when present and of the object's size (one GET when the
 * listing that found the object saw it, else a HEAD and a GET; no request when the listing saw
 * none), else a header walk ({@link walkRecordIOHeaders}, {@link walkTFRecordHeaders}). What was loaded
 * or built is cached for the next reader of this version. A GZIP/ZLIB TFRecord object, which has
 * no offsets to index, gives its compression and the requests spent finding it out.
 */
export async function loadRemoteIndex(
  format: SidecarIndex['format'],
  source: ByteSource,
  object: ObjectStat,
  cache: IndexCache,
): Promise<RemoteIndex | (CompressedObject & { readonly requests: number })> {
  const { version, location, size } = object;
  if (version !== undefined) {
    const cached = await cache.get(format, location, version, size);
    if (cached !== undefined) return { index: cached.index, report: { origin: cached.origin, requests: 0 } };
  }
  const counter: RequestCounter = { requests: 0 };
  const sidecar = await readSidecar(format, source, object, counter);
  let index: SidecarIndex;
  let origin: IndexOrigin = 'sidecar';
  if (sidecar.index !== undefined) {
    index = sidecar.index;
  } else {
    origin = 'header-walk';
    const walked =
      format === 'recordio'
        ? await walkRecordIOHeaders(source, object, counter)
        : await walkTFRecordHeaders(source, object, counter);
    if ('compressed' in walked) return { compressed: walked.compressed, requests: counter.requests };
    index = walked;
  }
  if (version !== undefined) await cache.put(location, version, index);
  const report: RemoteIndexReport =
    sidecar.refused === undefined
      ? { origin, requests: counter.requests }
      : { origin, requests: counter.requests, sidecarRefused: sidecar.refused };
  return { index, report };
}

/** The sidecar of `object` if present and matching; why it was refused if present and not. */
async function readSidecar(
  format: SidecarIndex['format'],
  source: ByteSource,
  object: ObjectStat,
  counter: RequestCounter,
): Promise<{ index?: SidecarIndex; refused?: string }> {
  const location = `${object.location}${SIDECAR_SUFFIX}`;
  // A listing that saw the object also saw its sidecar, or saw there is none: no HEAD either way.
  const listed = object.sidecars?.find((sidecar) => sidecar.location === location);
  if (object.sidecars !== undefined && listed === undefined) return {};
  let bytes: Uint8Array | undefined;
  if (listed !== undefined) bytes = await readListedSidecar(source, listed, counter);
  if (bytes === undefined) {
    let stat: ObjectStat;
    try {
      counter.requests++;
      stat = await source.stat(location);
    } catch (error) {
      if (hasErrorCode(error, 'NOT_FOUND')) return {};
      throw sidecarError(location, error);
    }
    counter.requests++;
    bytes = await source.readRange(stat, 0, stat.size);
  }
  let index: SidecarIndex;
  try {
    index = decodeSidecarIndex(bytes, format, location);
  } catch (error) {
    return { refused: (error as Error).message };
  }
  if (index.dataSize !== object.size) {
    return {
      refused: `${location} indexes ${index.dataSize} bytes, and ${object.location} has ${object.size}`,
    };
  }
  return { index };
}

/**
 * The bytes of a sidecar as the listing saw it (one GET, pinned to the listed ETag); `undefined`
 * when it was replaced or removed since, so the caller looks it up afresh.
 */
async function readListedSidecar(
  source: ByteSource,
  listed: ObjectStat,
  counter: RequestCounter,
): Promise<Uint8Array | undefined> {
  try {
    counter.requests++;
    return await source.readRange(listed, 0, listed.size);
  } catch (error) {
    if (hasErrorCode(error, 'CHANGED') || hasErrorCode(error, 'NOT_FOUND')) return undefined;
    throw sidecarError(listed.location, error);
  }
}

function sidecarError(location: string, error: unknown): DataReaderError {
  return new DataReaderError(
    'IO',
    `cannot read the sidecar index ${location}: ${storageReason(error)}`,
    error,
  );
}
