import { EdlError } from '@edl/common';

/**
 * Stable codes of {@link RemoteError}. Programs branch on these, never on messages.
 *
 * - `NOT_FOUND`: the object or bucket does not exist (404).
 * - `ACCESS_DENIED`: the server refused the credentials or the request (401, 403).
 * - `CHANGED`: the object was replaced or deleted since it was stat'ed (412 on `If-Match`, or a
 *   response whose ETag, `Last-Modified` or size is not the pinned one): its bytes are never mixed.
 * - `OUT_OF_RANGE`: the server refused the byte range (416).
 * - `UNAVAILABLE`: every attempt failed with a retryable fault (throttling, 5xx, resets, timeouts).
 * - `BAD_RESPONSE`: the server answered something this client cannot use.
 * - `MISSING_DEPENDENCY`: an optional package needed for this origin is not installed.
 */
export type RemoteErrorCode =
  | 'NOT_FOUND'
  | 'ACCESS_DENIED'
  | 'CHANGED'
  | 'OUT_OF_RANGE'
  | 'UNAVAILABLE'
  | 'BAD_RESPONSE'
  | 'MISSING_DEPENDENCY';

/** Where a {@link RemoteError} happened. */
export interface RemoteErrorLocation {
  /** The object's URL, as {@link displayUrl} prints it (never with a credential). */
  readonly url: string;
  /** First byte of the range being read, when a range was. */
  readonly offset?: number | undefined;
  /** Length of the range being read. */
  readonly length?: number | undefined;
  /** The HTTP status of the answer that decided the failure, when there was one. */
  readonly status?: number | undefined;
  /** The underlying error. */
  readonly cause?: unknown;
}

/**
 * Every failure of a remote byte source that is not a bad argument, in the format of the readers'
 * errors (`RecordIOError`): `CODE: bytes A-B of URL: detail` on one line, so a log line alone says
 * which object and which bytes. URLs are shown without user info and query string, which may hold
 * credentials (presigned URLs carry a signature in the query).
 */
export class RemoteError extends EdlError<RemoteErrorCode> {
  override readonly name: string = 'RemoteError';
  /** The object's URL, without credentials. */
  readonly url: string;
  /** First byte of the range being read, when a range was. */
  readonly offset: number | undefined;
  /** Length of the range being read, when a range was. */
  readonly length: number | undefined;
  /** The HTTP status that decided the failure, when there was one. */
  readonly status: number | undefined;
  /** The text of the fault without the location prefix. */
  readonly detail: string;

  constructor(code: RemoteErrorCode, detail: string, location: RemoteErrorLocation) {
    const text = detail.replace(/\s*\n\s*/g, ' ');
    const where =
      location.offset !== undefined && location.length !== undefined
        ? `bytes ${location.offset}-${location.offset + location.length - 1} of ${location.url}`
        : location.url;
    super(code, `${code}: ${where}: ${text}`, { cause: location.cause });
    this.url = location.url;
    this.offset = location.offset;
    this.length = location.length;
    this.status = location.status;
    this.detail = text;
  }
}

/**
 * `url` as errors and logs may print it: without `user:password@` and without the query string
 * (where presigned URLs carry their signature), which are replaced by `…` markers.
 */
export function displayUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return url;
  }
  const user = parsed.username !== '' || parsed.password !== '' ? '…@' : '';
  const query = parsed.search !== '' ? '?…' : '';
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}${query}`;
}
