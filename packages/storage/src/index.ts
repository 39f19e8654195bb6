export type { ByteSource, ObjectStat, ReadRangeOptions } from './byte-source.js';
