/**
 * @edl/recordio: read and write RecordIO files (the format of the Go package wangkuiyi/recordio)
 * through the native elasticdl-ts core.
 *
 * @packageDocumentation
 */
export type { ChunkInfo } from './chunk-info.js';
export { COMPRESSORS, type CompressorName, compressorName } from './compressor.js';
export {
  decodeRecordIORange,
  decodeRecordIORangeSync,
  decodeTFRecordRange,
  decodeTFRecordRangeSync,
  type RecordIORangeOptions,
  type TFRecordRangeOptions,
} from './decode-memory.js';
export {
  type FaultLocation,
  RecordIOError,
  type RecordIOErrorCode,
  type RecordIOErrorLocation,
} from './errors.js';
export { buildLocalSidecarIndex, headerCheck } from './index-file/local-sidecar.js';
export {
  BLOCK_HEADER_BYTES,
  decodeSidecarIndex,
  encodeSidecarIndex,
  type IndexedBlock,
  recordioSidecarIndex,
  type SidecarIndex,
  sidecarCheck,
  tfrecordRecordsPerBlock,
  tfrecordSidecarIndex,
} from './index-file/sidecar-index.js';
export {
  getAddon,
  type LoadAddonOptions,
  type LoadAttempt,
  loadNativeAddon,
  NATIVE_PATH_ENV,
  platformPackageName,
  SOURCE_PACKAGE,
} from './native/load-addon.js';
export { type NativeInfo, nativeInfo } from './native/native-info.js';
export { type PrefetchRange, PrefetchRangeError } from './prefetch-error.js';
export { PrefetchedBatch } from './prefetched-batch.js';
export { Prefetcher, type PrefetcherOptions, type PrefetcherStats } from './prefetcher.js';
export { RecordIOReader, type RecordIOReaderOptions, type SkipStats } from './reader.js';
export { type BatchRecycler, RecordBatch } from './record-batch.js';
export type { ChunkCacheStats } from './record-cache.js';
export { decodeFrameStream, type FrameStreamOptions } from './tfrecord/frame-stream.js';
export {
  detectCompression,
  TFRECORD_COMPRESSIONS,
  type TFRecordCompression,
  type TFRecordCompressionOption,
  TFRecordError,
  type TFRecordErrorLocation,
  TFRecordReader,
  type TFRecordReaderOptions,
  TFRecordWriter,
  type TFRecordWriterOptions,
} from './tfrecord/index.js';
export { StreamCursor } from './tfrecord/stream-cursor.js';
export { type UploadedDataFile, uploadDataFile } from './upload-data-file.js';
export {
  type RecordBatchInput,
  RecordIOWriter,
  type RecordIOWriterOptions,
  type RecordIOWriterStats,
} from './writer.js';
