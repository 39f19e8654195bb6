export type { ByteSource, ObjectStat, ReadRangeOptions } from './byte-source.js';
export { type ByteSourceLoader, byteSourceFor, registerByteSource } from './byte-sources.js';
export { HttpByteSource, type HttpByteSourceOptions } from './http/http-byte-source.js';
export { LocalFileSource, localFiles } from './local-file-source.js';
export {
  compareCodeUnits,
  isListedName,
  normalizeLocation,
  SIDECAR_SUFFIXES,
  schemeOf,
} from './locations.js';
export {
  type RangeRequest,
  RemoteByteSource,
  type RemoteSourceOptions,
} from './remote/remote-byte-source.js';
export { RemoteError, type RemoteErrorCode, type RemoteErrorLocation } from './remote/remote-error.js';
export { LATENCY_BUCKETS_MS, RemoteStats, type RemoteStatsSnapshot } from './remote/remote-stats.js';
export type { RetryCause, RetryOptions } from './remote/retry-policy.js';
export { S3ByteSource, type S3ByteSourceOptions, type S3StaticCredentials } from './s3/s3-byte-source.js';
// The write side: objects committed whole (local files, S3 multipart), and the process's S3 settings.
export { configureS3, type S3ClientSettings } from './s3/s3-config.js';
export {
  deleteObject,
  type ObjectSink,
  type ObjectSinkOptions,
  openWriter,
  putObject,
} from './sink/object-sink.js';
export { StorageError, type StorageErrorCode } from './storage-error.js';
