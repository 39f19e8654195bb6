export type { ByteSource, ObjectStat, ReadRangeOptions } from './byte-source.js';
export { type ByteSourceLoader, byteSourceFor, registerByteSource } from './byte-sources.js';
export { LocalFileSource, localFiles } from './local-file-source.js';
export {
  compareCodeUnits,
  isListedName,
  normalizeLocation,
  SIDECAR_SUFFIXES,
  schemeOf,
} from './locations.js';
export { StorageError, type StorageErrorCode } from './storage-error.js';
