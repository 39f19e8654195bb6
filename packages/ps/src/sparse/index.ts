/**
 * The sparse side of the parameter store: embedding tables whose rows are created on first use,
 * the sparse optimizer kernels that update them row by row, their checkpoint layout, and where
 * rows and dense variables live when the store runs as several shards.
 */
export {
  EmbeddingTable,
  type EmbeddingTableOptions,
  mergeDuplicateIds,
  type TableSlabView,
} from './embedding-table.js';
export { fmix32, fnv1a32, hashRowId, isRowId, MAX_ROW_ID } from './id-hash.js';
export { type DensePlacement, placeDenseVariables, shardOfId } from './placement.js';
export { RowInitializer, type RowInitializerConfig } from './row-initializer.js';
export { createSparseOptimizer, type SparseOptimizer } from './sparse-optimizer.js';
export {
  type DecodeTableOptions,
  decodeEmbeddingTable,
  type EmbeddingTableHeader,
  encodeEmbeddingTable,
} from './table-codec.js';
