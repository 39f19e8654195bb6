import { SIDECAR_SUFFIXES } from '../locations.js';
/** A parsed `s3://bucket/key` location. */
export interface S3Location {
  readonly bucket: string;
  /** The key, or a key prefix ending in `/` (empty for a whole bucket). Taken literally: no percent-decoding. */
  readonly key: string;
}

/**
 * Parses `s3://bucket/key` or `s3://bucket/prefix/`. The key is everything after the bucket's
 * slash, as written (S3 keys may hold any character, so nothing is decoded). Throws a TypeError
 * naming the location when it is not an `s3://` URL with a bucket.
 */
export function parseS3Location(location: string): S3Location {
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/s.exec(location);
  if (match === null || match[1] === undefined) {
    throw new TypeError(`not an S3 location (expected s3://bucket/key or s3://bucket/prefix/): ${location}`);
  }
  return { bucket: match[1], key: match[2] ?? '' };
}

/** `s3://bucket/key`. */
export function formatS3Location(bucket: string, key: string): string {
  return `s3://${bucket}/${key}`;
}

/** Whether `key` names a sidecar index ({@link SIDECAR_SUFFIXES}). */
export function isSidecarKey(key: string): boolean {
  return SIDECAR_SUFFIXES.some((suffix) => key.endsWith(suffix));
}
