import { TFRECORD_COMPRESSIONS, type TFRecordCompressionOption } from '@edl/recordio';

/** Accepted values of `--compression`. */
export const COMPRESSION_CHOICES: readonly TFRecordCompressionOption[] = TFRECORD_COMPRESSIONS;
