/**
 * @edl/worker: the worker of elasticdl-ts. Compute backends for TensorFlow.js, the model definition
 * format, the task-fed shared dataset, the training / evaluation / prediction loop and its timers.
 *
 * @packageDocumentation
 */

/**
 * The TensorFlow.js instances the worker computes with. Model definitions outside this repository
 * should import these rather than their own copies: two copies of tfjs-core are two engines, and
 * tensors of one are unknown to the other.
 */
export { tf, tfl } from '../hooks/tfjs-commonjs.mjs';

import { registerChainedOps } from './chained-ops.js';

// Chained tensor methods (x.square().mean()) for every model, as `@tensorflow/tfjs` has them.
registerChainedOps();

export * from './backends/index.js';
export { batchRecords, type MinibatchOptions, minibatches } from './batch-records.js';
export { registerChainedOps } from './chained-ops.js';
export { assertSingleTfjs, loadedTfjsCopies } from './duplicate-tfjs.js';
export * from './embedding/index.js';
export {
  taskErrorText,
  WorkerError,
  type WorkerErrorCode,
} from './errors.js';
export { checkModelDefinition, loadModelDefinition } from './load-model-definition.js';
export { jsonLineLogger, type LogFields, silentLogger, type WorkerLogger } from './logger.js';
export { fetchTask, type MasterConnection, type TaskAnswer } from './master-connection.js';
export { MASTER_GONE_EXIT_CODE, MasterWatch, type MasterWatchOptions } from './master-watch.js';
export { minibatchSize, minibatchTensors, sliceMinibatch } from './minibatch-slice.js';
export type {
  BuiltinMetric,
  DatasetFn,
  DatasetFnMetadata,
  Features,
  LossFn,
  MetricFn,
  Minibatch,
  Mode,
  ModelDefinition,
  OptimizerName,
  OptimizerSpec,
  PredictionContext,
  PredictionOutputsProcessor,
} from './model-definition.js';
export { ModelReplica } from './model-replica.js';
export { ModelRunner, type ModelRunnerOptions, type StepOrigin, type StepResult } from './model-runner.js';
export {
  loadNonTrainableWeights,
  NON_TRAINABLE_FILE,
  saveNonTrainableWeights,
} from './non-trainable-file.js';
export { SHARED_PACKAGES, shareWorkerPackages } from './package-sharing.js';
export { JsonLinesPredictionWriter } from './prediction-writer.js';
export { prefetch } from './prefetch.js';
export { type RetryOptions, withRetries } from './retrying-master.js';
export type { DensePlacementFunction } from './steps/dense-on-shards.js';
export { type PendingTask, type RecordSlice, TaskFeed, type TaskFeedOptions } from './task-feed.js';
export {
  formatTimerTable,
  type GradientComputations,
  sumGradientComputations,
  sumTimerTotals,
  TIMER_NAMES,
  type TimerName,
  Timers,
  type TimersReport,
  type TimerTableRow,
  type TimerTotal,
  type TimerTotals,
} from './timers.js';
export { runWorker, type WorkerOptions, type WorkerProgress, type WorkerResult } from './worker.js';
