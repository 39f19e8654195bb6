/**
 * @edl/master: the master of an elasticdl-ts job. Dynamic-sharding task manager with exactly-once
 * record ranges, the parameter store of @edl/ps run in-process, evaluation service, checkpoints, the
 * gRPC server, and the local instance manager. The Kubernetes instance manager and the builders of a
 * job's Kubernetes objects are at `@edl/master/kubernetes`, so that importing the master does not
 * load the Kubernetes client.
 */

export {
  createOptimizer,
  OPTIMIZER_PARAMS,
  type Optimizer,
  type OptimizerConfig,
  type OptimizerSlots,
} from '@edl/common';
// The parameter store is @edl/ps; the master's API keeps naming it.
export {
  DEFAULT_ASYNC_MAX_STALENESS,
  defaultMaxStaleness,
  type GradientCheck,
  type GradientCounts,
  type GradientOutcomes,
  ParameterStore,
  ParameterStoreError,
  type ParameterStoreMode,
  type ParameterStoreOptions,
  type ParameterStoreSnapshot,
  type ReportReply,
} from '@edl/ps';
export {
  type Checkpoint,
  type DensePlacement,
  findCheckpoint,
  listCheckpoints,
  loadLatestCheckpoint,
  readCheckpoint,
  writeCheckpoint,
} from './checkpoint.js';
export { densePlacementOf } from './dense-placement.js';
export {
  CheckpointError,
  JobFailedError,
  MasterError,
  type MasterErrorCode,
  MasterStateError,
} from './errors.js';
export { auc, MetricsAccumulator } from './evaluation-metrics.js';
export { type EvaluationResult, EvaluationService } from './evaluation-service.js';
export { FILE_INDEX_MAX_BYTES, fileIndexHandler, indexCacheDirsOf } from './file-index-service.js';
export { type MasterServer, type MasterServerOptions, serveMaster } from './grpc-server.js';
export {
  type LiveViewOptions,
  type LiveViewServer,
  serveLiveView,
} from './http/live-view-server.js';
export { createJobMetrics, type JobMetrics } from './http/metrics.js';
export type { InstanceEvents, InstanceManager } from './instance-manager.js';
export { type JobLearningRateDecay, jobShardOptimizer, jobUpdates } from './job-decay.js';
export {
  type JobMasterOptions,
  type JobSettings,
  masterOptionsFor,
  type OptimizerSpecLike,
  optimizerConfigFromSpec,
  parameterStoreOptionsFor,
} from './job-settings.js';
export {
  type JobEvent,
  type JobStatusSnapshot,
  JobStatusTracker,
  type JobStatusTrackerOptions,
  type TaskCounts,
  type WorkerStatus,
} from './job-status.js';
export { LocalInstanceManager, type LocalInstanceManagerOptions } from './local-instance-manager.js';
export { createStreamLogger, type MasterLogger, silentLogger } from './logger.js';
export {
  type EvaluationReport,
  type JobResult,
  Master,
  type MasterOptions,
  type TaskReply,
} from './master.js';
export type { MasterObserver } from './master-observer.js';
export type { ShardRollBack } from './shard-cuts.js';
export { type MasterHandle, type StartMasterOptions, startMaster } from './start-master.js';
export { TaskManager } from './task-manager.js';
export type { TaskManagerState } from './tasks/task-state.js';
export {
  JOB_TYPES,
  type JobType,
  type RangeCheck,
  type RecordCount,
  type RecordsByKind,
  type TaskManagerEvent,
  type TaskManagerOptions,
  type TaskManagerPhase,
  type TaskManagerStatus,
} from './tasks/types.js';
export { encodeScalarEvent, TensorBoardWriter } from './tensorboard.js';
