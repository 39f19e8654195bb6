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
 * Where a remote object's index came from: the local cache, its sidecar, a header walk, or (a
 * GZIP/ZLIB TFRecord object, which has no index) a count of its records by one decompressing pass.
 */
export type IndexOrigin = 'cache' | 'sidecar' | 'header-walk' | 'stream-count';

/** How a remote object was indexed, and what it cost. */
export interface RemoteIndexReport {
  readonly origin: IndexOrigin;
  /** Requests spent on the index: the sidecar's HEAD and GET, or the header walk's GETs. */
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
 * request), the sidecar `<object>.idx` when present and of the object's size (a HEAD and a GET),
 * else a header walk ({@link walkRecordIOHeaders}, {@link walkTFRecordHeaders}). What was loaded
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
    if (cached !== undefined) return { index: cached, report: { origin: 'cache', requests: 0 } };
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
  let stat: ObjectStat;
  try {
    counter.requests++;
    stat = await source.stat(location);
  } catch (error) {
    if (hasErrorCode(error, 'NOT_FOUND')) return {};
    throw new DataReaderError(
      'IO',
      `cannot read the sidecar index ${location}: ${storageReason(error)}`,
      error,
    );
  }
  counter.requests++;
  const bytes = await source.readRange(stat, 0, stat.size);
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
