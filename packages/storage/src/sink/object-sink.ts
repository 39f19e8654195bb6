import { checkNonEmptyString } from '@edl/common';
import { normalizeLocation, schemeOf } from '../locations.js';
import type { RemoteStats } from '../remote/remote-stats.js';
import type { RetryOptions } from '../remote/retry-policy.js';
import type { S3ClientSettings } from '../s3/s3-config.js';
import { StorageError } from '../storage-error.js';
import { LocalFileSink, removeLocalFile } from './local-file-sink.js';

/**
 * An object being written: a local file or an S3 object. Nothing is visible at its location until
 * {@link ObjectSink.close} commits it whole, and a sink that fails or is aborted leaves nothing
 * behind (no partial file, no partial object, no pending multipart upload): a reader sees the old
 * object or the new one, never a part.
 */
export interface ObjectSink {
  /** The object's location as errors name it (a path, or `s3://bucket/key`). */
  readonly location: string;
  /** Bytes given to {@link write} so far. */
  readonly bytesWritten: number;
  /**
   * Appends `chunk`. The caller may reuse `chunk` once the promise resolves. Resolves when the sink
   * can take more (a full part may be uploading meanwhile: memory stays bounded). A failure aborts
   * the sink.
   */
  write(chunk: Uint8Array): Promise<void>;
  /** Commits the object: it appears at its location whole, or not at all (the promise rejects). */
  close(): Promise<void>;
  /** Discards what was written; the location is left as it was. Safe to call after a failure. */
  abort(): Promise<void>;
}

/** Options of {@link openWriter}, {@link putObject} and {@link deleteObject}. Every field is optional. */
export interface ObjectSinkOptions extends RetryOptions {
  /** Counters of the requests (S3), as the byte sources keep them. */
  readonly stats?: RemoteStats;
  /**
   * S3: bytes per part of a multipart upload (default 8 MiB, at least S3's minimum of 5 MiB). An
   * object of at most one part is sent by one PutObject.
   */
  readonly partSize?: number;
  /** S3: parts uploading at once (default 4). Memory: `(partsInFlight + 1) * partSize`. */
  readonly partsInFlight?: number;
  /** S3: client settings instead of those of `configureS3` (or the SDK's defaults). */
  readonly s3?: S3ClientSettings;
  /** Aborts the write (S3: the multipart upload is aborted too). */
  readonly signal?: AbortSignal;
}

/**
 * Opens `location` for writing: a plain path or `file:` URL (a temporary file beside it, then
 * fsync and rename, then fsync of the directory; parent directories are created), or `s3://bucket/key`
 * (multipart upload for objects over one part, PutObject below; the AWS SDK is loaded on first use).
 *
 * @throws StorageError `UNSUPPORTED_SCHEME` for a URL scheme that cannot be written (https:, ...).
 */
export async function openWriter(location: string, options: ObjectSinkOptions = {}): Promise<ObjectSink> {
  const scheme = schemeOf(checkNonEmptyString(location, 'location'));
  if (scheme === undefined || scheme === 'file') return LocalFileSink.open(normalizeLocation(location));
  if (scheme === 's3') return (await import('./s3-object-sink.js')).S3ObjectSink.open(location, options);
  throw unwritable(location, scheme);
}

/** Writes `bytes` as the object at `location`, committed whole (see {@link openWriter}). */
export async function putObject(
  location: string,
  bytes: Uint8Array,
  options: ObjectSinkOptions = {},
): Promise<void> {
  const sink = await openWriter(location, options);
  try {
    await sink.write(bytes);
    await sink.close();
  } catch (error) {
    // A failed write or close has aborted the sink already and named any leftover in `error`.
    await sink.abort().catch(() => undefined);
    throw error;
  }
}

/** Deletes the object at `location`; one that does not exist is no error. */
export async function deleteObject(location: string, options: ObjectSinkOptions = {}): Promise<void> {
  const scheme = schemeOf(checkNonEmptyString(location, 'location'));
  if (scheme === undefined || scheme === 'file') return removeLocalFile(normalizeLocation(location));
  if (scheme === 's3') return (await import('./s3-object-sink.js')).deleteS3Object(location, options);
  throw unwritable(location, scheme);
}

function unwritable(location: string, scheme: string): StorageError {
  return new StorageError(
    'UNSUPPORTED_SCHEME',
    location.includes('@') ? `${scheme}://...` : location,
    `objects cannot be written to ${scheme}: URLs (writable: plain paths, file:, s3:)`,
  );
}
