import { EdlError } from '@edl/common';

/**
 * Stable codes of {@link StorageError}. Programs branch on these, never on messages.
 *
 * - `IO`: an object or a location could not be listed, stat'ed or read (the message has the cause).
 * - `CHANGED`: the object was replaced since it was stat'ed: a read pinned to that version refuses
 *   to mix data of two versions.
 * - `OUT_OF_RANGE`: a read of bytes past the object's end.
 * - `UNSUPPORTED_SCHEME`: no byte source is registered for a location's URL scheme.
 */
export type StorageErrorCode = 'IO' | 'CHANGED' | 'OUT_OF_RANGE' | 'UNSUPPORTED_SCHEME';

/**
 * A failure of a byte source. The message starts with the code and names the object (a path or a
 * URL without credentials), e.g. `CHANGED: /data/a.rio changed since it was opened (...)`.
 */
export class StorageError extends EdlError<StorageErrorCode> {
  override readonly name = 'StorageError';
  /** The object or location concerned. */
  readonly location: string;
  /** What went wrong, without the code and the location. */
  readonly detail: string;

  /**
   * @param code - stable error code.
   * @param location - the object or location concerned, as the reader names it.
   * @param detail - what went wrong (the code and the location are added).
   * @param cause - the underlying error, if any.
   */
  constructor(code: StorageErrorCode, location: string, detail: string, cause?: unknown) {
    super(code, `${code}: ${location}: ${detail}`, { cause });
    this.location = location;
    this.detail = detail;
  }
}
