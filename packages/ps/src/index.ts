/**
 * @edl/ps: the parameter store of an elasticdl-ts job. The model's variables with sync or async
 * (bounded-staleness) updates by the optimizers of @edl/common, the variables' part of checkpoints,
 * the gradient path a ledger of exactly-once ranges wraps, and the GetModel / ReportVariables /
 * ReportGradient / GradientStream handlers a server registers. The master runs it in its process;
 * `startParameterServer` runs one shard of embedding tables as a process of its own (`edl ps`).
 */

export { ParameterStoreError, type ParameterStoreErrorCode } from './errors.js';
export {
  type GradientLedger,
  type GradientOutcomes,
  type ModelReply,
  type ParameterEndpoints,
  ParameterService,
  type ReportReply,
} from './parameter-service.js';
export {
  DEFAULT_ASYNC_MAX_STALENESS,
  defaultMaxStaleness,
  type GradientCheck,
  type GradientCounts,
  ParameterStore,
  type ParameterStoreMode,
  type ParameterStoreOptions,
  type ParameterStoreSnapshot,
} from './parameter-store.js';
export { type ParameterRpcHandlers, parameterRpcHandlers } from './rpc-handlers.js';
export * from './service/index.js';
export * from './sparse/index.js';
export {
  decodeStoreCheckpoint,
  encodeStoreCheckpoint,
  type SlotEntry,
  type StoreCheckpointHeader,
  type VariableEntry,
} from './store-checkpoint.js';
