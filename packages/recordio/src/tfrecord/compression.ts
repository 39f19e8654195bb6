import { getAddon } from '../native/load-addon.js';

/** How a TFRecord file is stored: as written by TensorFlow's `TFRecordOptions(compression_type)`. */
export type TFRecordCompression = 'none' | 'gzip' | 'zlib';

/** A {@link TFRecordCompression}, or `auto`: told from the file's first bytes. */
export type TFRecordCompressionOption = TFRecordCompression | 'auto';

/** The accepted values of a compression option, for validation and `--help`. */
export const TFRECORD_COMPRESSIONS: readonly TFRecordCompressionOption[] = ['auto', 'none', 'gzip', 'zlib'];

/**
 * Tells the compression of a stream from its first bytes (16 are plenty): a valid TFRecord header
 * is `none` (checked first, since a length can look like a gzip or zlib header), then the gzip
 * magic and the zlib header. An empty stream is `none`; anything else is `undefined`.
 */
export function detectCompression(head: Uint8Array): TFRecordCompression | undefined {
  const kind = getAddon().tfrecordDetect(head);
  return kind === 'unknown' ? undefined : kind;
}
