/**
 * A parameter-server shard as its own process (`edl ps`): the embedding rows of one shard served
 * over the ParameterServerService gRPC service of edl/v1/ps.proto.
 */

export { decodeDensePart, encodeDensePart } from './dense-part-codec.js';
export { DenseShard, type DenseUpdate } from './dense-shard.js';
export {
  checkTableSpecs,
  EmbeddingShard,
  type EmbeddingTableDeclaration,
  type EmbeddingTableSpec,
  type JobTableSettings,
  type ShardTableInfo,
} from './embedding-shard.js';
export {
  isObjectStoreDir,
  readObjectStoreShardMarkers,
  restoreShardPart,
  saveShardPart,
  shardPartsOf,
  shardPartsPrefix,
} from './object-store-shard-checkpoint.js';
export {
  type ParameterServer,
  type ParameterServerOptions,
  startParameterServer,
} from './parameter-server.js';
export {
  readShardMarkers,
  resetShard,
  restoreShardCheckpoint,
  type ShardCheckpointMarker,
  saveShardCheckpoint,
  shardCheckpointDirName,
} from './shard-checkpoint.js';
