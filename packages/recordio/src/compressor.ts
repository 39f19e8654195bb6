import type { NativeCompressorId } from './native/addon-types.js';

/** The compressors a RecordIO chunk can use. */
export type CompressorName = 'none' | 'snappy' | 'gzip';

/** The compressor names, in chunk-header id order (0 none, 1 snappy, 2 gzip). */
export const COMPRESSORS: readonly CompressorName[] = ['none', 'snappy', 'gzip'];

/** Name of a chunk-header compressor id; an unknown id stays a number so nothing is hidden. */
export function compressorName(id: number): CompressorName | number {
  return COMPRESSORS[id] ?? id;
}

/** Chunk-header id of a compressor name. */
export function compressorId(name: CompressorName): NativeCompressorId {
  return COMPRESSORS.indexOf(name) as NativeCompressorId;
}
