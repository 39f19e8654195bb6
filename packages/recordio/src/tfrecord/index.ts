export {
  detectCompression,
  TFRECORD_COMPRESSIONS,
  type TFRecordCompression,
  type TFRecordCompressionOption,
} from './compression.js';
export { TFRecordError, type TFRecordErrorLocation } from './tfrecord-error.js';
export { TFRecordReader, type TFRecordReaderOptions } from './tfrecord-reader.js';
export { TFRecordWriter, type TFRecordWriterOptions } from './tfrecord-writer.js';
