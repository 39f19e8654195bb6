/**
 * The seam between storage and formats, in the spirit of tf.data's `FileSystem` /
 * `RandomAccessFile`: every format (RecordIO, TFRecord, text/CSV) reads through this interface and
 * never knows whether the bytes come from a local disk or an object store. One format × one storage,
 * not formats × storages.
 */

/** One object (a file, an S3 object, an HTTP resource) as it is now: enough to pin later reads to it. */
export interface ObjectStat {
  /** The object's location as a URL or a local path, as readers name it in errors. */
  readonly location: string;
  /** Size in bytes. */
  readonly size: number;
  /**
   * What identifies this version of the object, so reads can be pinned to it and a replaced object
   * detected: the ETag for S3 and HTTP, `Last-Modified` plus size where a server sends no ETag, and
   * the modification time, size and inode for a local file. `undefined` when the origin offers
   * nothing to pin on.
   */
  readonly version: string | undefined;
  /**
   * The sidecar files (`<location>.idx`, ...: readers' indexes, never listed as data) that the
   * listing which found this object saw next to it, so that a reader takes one GET for a sidecar
   * and none to learn there is none. `undefined` when no listing said (a `stat`, or a source whose
   * listing does not report them): the reader then asks the source.
   */
  readonly sidecars?: readonly ObjectStat[];
}

/** Options of {@link ByteSource.readRange}. */
export interface ReadRangeOptions {
  /** Aborts the read (the promise rejects with the signal's reason). */
  readonly signal?: AbortSignal;
  /**
   * Where to put the bytes: a buffer of at least `length` bytes that the caller owns, so a reader
   * can bound its memory by reusing buffers. Without it the source allocates one.
   */
  readonly into?: Uint8Array;
}

/**
 * A place objects are read from. Implementations: local files (`LocalFileSource`); remote ones
 * (S3-compatible object stores, HTTP(S)) are additions of the same shape.
 */
export interface ByteSource {
  /** The URL scheme this source serves (`file` for local paths, `s3`, `https`, ...). */
  readonly scheme: string;

  /**
   * The objects a location names, sorted by location: a directory's (or key prefix's) files, or the
   * one object a file location names. Readers' sidecar files (indexes) are not listed.
   */
  list(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat[]>;

  /** The object at `location` as it is now. */
  stat(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat>;

  /**
   * Bytes `[offset, offset + length)` of `object`, as the version `object` was stat'ed at: a read
   * of an object that was replaced since fails, never mixing data of two versions. A range that
   * ends past the object's end fails too.
   */
  readRange(
    object: ObjectStat,
    offset: number,
    length: number,
    options?: ReadRangeOptions,
  ): Promise<Uint8Array>;

  /**
   * The local path of `object` when the native readers can open it themselves (and keep their
   * `pread` path and prefetch threads), else `undefined`.
   */
  localPath(object: ObjectStat): string | undefined;
}
