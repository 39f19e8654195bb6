/**
 * The worker's side of distributed embeddings: the `embedding` layer whose table lives on the
 * parameter servers, and the step mechanics around it (unique ids, pulled rows in a per-step
 * context, the rows gradient to push), and the parameter-server shards the worker's steps pull
 * rows from and push rows gradients to.
 */
export {
  activeEmbeddingContext,
  EmbeddingContext,
  EmbeddingError,
  type EmbeddingErrorCode,
  type RowGradients,
  withEmbeddingContext,
} from './embedding-context.js';
export {
  DistributedEmbedding,
  type EmbeddingLayerArgs,
  embedding,
  isDistributedEmbedding,
} from './embedding-layer.js';
export {
  type EmbeddingFeed,
  type EmbeddingRowSource,
  embeddingFeeds,
  embeddingGradients,
  prepareEmbeddings,
} from './embedding-step.js';
export { type EmbeddingCombiner, gatherRows } from './gather-rows.js';
export {
  modelEmbeddingTables,
  ParameterServerRows,
  type ParameterServerRowsOptions,
} from './parameter-server-rows.js';
export { type UniqueIds, uniqueIds } from './unique-ids.js';
