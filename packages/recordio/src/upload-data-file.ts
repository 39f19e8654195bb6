import { open } from 'node:fs/promises';
import { type ObjectSinkOptions, openWriter, putObject } from '@edl/storage';
import { buildLocalSidecarIndex } from './index-file/local-sidecar.js';
import { encodeSidecarIndex } from './index-file/sidecar-index.js';

/** Bytes read from the local file per sink write (one S3 part at the default part size). */
const UPLOAD_CHUNK_BYTES = 8 << 20;

/** What {@link uploadDataFile} wrote. */
export interface UploadedDataFile {
  /** Bytes of the data object. */
  readonly bytes: number;
  /** The sidecar index's location, when one was written. */
  readonly sidecar?: string;
}

/**
 * Uploads the finished local data file `file` as the object `location` (`s3://bucket/key`, or a
 * path), through @edl/storage's sink: multipart above one part, committed whole or not at all (a
 * failure aborts the upload and leaves no object). Then, for `format` `recordio` or `tfrecord`, its
 * sidecar index (`<location>.idx`, docs/recordio.md) built from the local file, so that remote
 * readers load the index in one GET instead of walking the object's headers.
 *
 * The data goes first: a sidecar is only used when it matches the object, so no order of the two
 * uploads can make a reader take a wrong index; a sidecar that fails to upload leaves the data
 * object whole, and the rejection says so.
 *
 * @param format - `undefined` (no index), or the file's format; a GZIP/ZLIB TFRecord file, which
 * has no record offsets, gets no index.
 */
export async function uploadDataFile(
  file: string,
  location: string,
  format: 'recordio' | 'tfrecord' | undefined,
  options: ObjectSinkOptions = {},
): Promise<UploadedDataFile> {
  const bytes = await uploadFile(file, location, options);
  if (format === undefined) return { bytes };
  const index = await buildLocalSidecarIndex(file, format).catch((error: unknown) => {
    // A compressed TFRecord stream has no offsets: it is read as one stream, with no index.
    if ((error as { code?: string }).code === 'NOT_SEEKABLE') return undefined;
    throw error;
  });
  if (index === undefined) return { bytes };
  const sidecar = `${location}.idx`;
  try {
    await putObject(sidecar, encodeSidecarIndex(index), options);
  } catch (error) {
    if (error instanceof Error) {
      error.message = `${location} was written whole, and its sidecar index was not (remote readers will walk its headers): ${error.message}`;
    }
    throw error;
  }
  return { bytes, sidecar };
}

/** Streams the local file `file` to the object `location`; resolves to its size. */
async function uploadFile(file: string, location: string, options: ObjectSinkOptions): Promise<number> {
  const sink = await openWriter(location, options);
  const input = await open(file, 'r');
  try {
    const buffer = Buffer.alloc(UPLOAD_CHUNK_BYTES);
    for (;;) {
      const { bytesRead } = await input.read(buffer, 0, buffer.byteLength, null);
      if (bytesRead === 0) break;
      await sink.write(buffer.subarray(0, bytesRead));
    }
    await sink.close();
    return sink.bytesWritten;
  } catch (error) {
    await sink.abort().catch(() => undefined);
    throw error;
  } finally {
    await input.close();
  }
}
