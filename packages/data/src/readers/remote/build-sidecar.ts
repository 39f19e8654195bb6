import { buildLocalSidecarIndex, type SidecarIndex } from '@edl/recordio';
import { byteSourceFor, normalizeLocation } from '@edl/storage';
import { DataReaderError } from '../errors.js';
import { type RequestCounter, walkRecordIOHeaders, walkTFRecordHeaders } from './header-walk.js';

/** A sidecar index built for a data file, and the requests it cost (0 for a local file). */
export interface BuiltSidecarIndex {
  readonly location: string;
  readonly index: SidecarIndex;
  readonly requests: number;
}

/**
 * Builds the sidecar index of a data file, local (from its headers, through the native reader) or
 * remote (a header walk through its byte source). Never reads an existing sidecar.
 *
 * @throws RecordIOError / TFRecordError for a damaged file; `DataReaderError` `IO` for a GZIP/ZLIB
 * TFRecord object, which has no record offsets to index.
 */
export async function buildSidecarIndex(
  location: string,
  format: SidecarIndex['format'],
): Promise<BuiltSidecarIndex> {
  const normalized = normalizeLocation(location);
  const source = await byteSourceFor(normalized);
  const object = await source.stat(normalized);
  const path = source.localPath(object);
  if (path !== undefined) {
    return { location: normalized, index: await buildLocalSidecarIndex(path, format), requests: 0 };
  }
  const counter: RequestCounter = { requests: 0 };
  const built =
    format === 'recordio'
      ? await walkRecordIOHeaders(source, object, counter)
      : await walkTFRecordHeaders(source, object, counter);
  if ('compressed' in built) {
    throw new DataReaderError(
      'IO',
      `cannot index ${normalized}: a GZIP/ZLIB TFRecord stream has no record offsets (it is read as one stream)`,
    );
  }
  return { location: normalized, index: built, requests: counter.requests };
}
