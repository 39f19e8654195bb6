import { create } from '@bufbuild/protobuf';
import {
  type DataPipelineStats,
  DataPipelineStatsSchema,
  DataStageStatsSchema,
  type StorageStats,
  StorageStatsSchema,
  type WorkerStats,
  WorkerStatsSchema,
} from './generated/edl/v1/master_pb.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

/**
 * Cumulative counters of one remote byte source (a URL scheme) in a worker process: what the
 * master exports as `edl_storage_*` so a user can see throttling while the job runs.
 */
export interface StorageStatsReport {
  /** The URL scheme: s3, https or http. */
  readonly scheme: string;
  /** Requests sent (HEAD, GET, LIST), retries included. */
  readonly requests: number;
  /** Body bytes received by range reads. */
  readonly bytes: number;
  /** Retries by cause. */
  readonly retries: Readonly<Record<string, number>>;
  /** Reads that failed for good. */
  readonly failures: number;
  /** Request latency (time to first byte) histogram. */
  readonly latency: {
    /** Upper bounds of the buckets, in seconds. */
    readonly boundsSeconds: readonly number[];
    /** Requests per bucket, not cumulative; one more entry than the bounds, for the rest. */
    readonly counts: readonly number[];
    readonly sumSeconds: number;
  };
}

/** A worker's cumulative counters, as it sends them with its heartbeats (plain numbers). */
export interface WorkerStatsReport {
  /** The compute backend in use (webgpu, tensorflow, wasm, cpu). */
  readonly backend: string;
  /** Training steps whose gradient the master accepted. */
  readonly steps: number;
  /** Records processed, per task kind. */
  readonly records: { readonly training: number; readonly evaluation: number; readonly prediction: number };
  /** Loss of the last accepted training step. */
  readonly lastLoss?: number;
  /** Mean loss of the steps accepted since the previous heartbeat, over `lossSteps` steps. */
  readonly meanLoss?: number;
  readonly lossSteps: number;
  /** Seconds since the worker started. */
  readonly elapsedSeconds: number;
  /** Seconds per timed activity (get_task, get_batch, input_fn, data_wait, compute_loss, ...). */
  readonly timerSeconds: Readonly<Record<string, number>>;
  /** Counters of the remote byte sources read, one per scheme (absent when it read none). */
  readonly storage?: readonly StorageStatsReport[];
  /** The data pipeline's tuner (absent when no stage is `'auto'`). */
  readonly dataPipeline?: DataPipelineReport;
}

/** One `'auto'` stage of a worker's data pipeline: the settings its tuner chose and the rates it measured. */
export interface DataStageReport {
  /** e.g. `Prefetch`, `ParallelMap(parse)`. */
  readonly label: string;
  readonly parallelism: number;
  readonly bufferSize: number;
  /** Elements per second of the parent's reads, of the stage's work on one thread, asked by the consumer (0: unmeasured). */
  readonly inputPerSecond: number;
  readonly workPerSecond: number;
  readonly consumerPerSecond: number;
  /** Estimated bytes of a buffered element. */
  readonly elementBytes: number;
  /** Elements returned, and how many had been when the settings last changed. */
  readonly elements: number;
  readonly lastChangeAtElement: number;
}

/** The autotuner of a worker process: its budgets and every live `'auto'` stage. */
export interface DataPipelineReport {
  readonly ramBudgetBytes: number;
  readonly cpuBudget: number;
  /** Bytes the stages hold under their settings, as the tuner models them. */
  readonly modelledBytes: number;
  readonly stages: readonly DataStageReport[];
}

/** The wire message of a {@link WorkerStatsReport}. */
export function toWorkerStatsMessage(stats: WorkerStatsReport): WorkerStats {
  return create(WorkerStatsSchema, {
    backend: stats.backend,
    steps: toWireInt(stats.steps, 'steps'),
    trainingRecords: toWireInt(stats.records.training, 'records.training'),
    evaluationRecords: toWireInt(stats.records.evaluation, 'records.evaluation'),
    predictionRecords: toWireInt(stats.records.prediction, 'records.prediction'),
    ...(stats.lastLoss === undefined || !Number.isFinite(stats.lastLoss) ? {} : { lastLoss: stats.lastLoss }),
    ...(stats.meanLoss === undefined || !Number.isFinite(stats.meanLoss) ? {} : { meanLoss: stats.meanLoss }),
    lossSteps: toWireInt(stats.lossSteps, 'lossSteps'),
    elapsedSeconds: stats.elapsedSeconds,
    timerSeconds: { ...stats.timerSeconds },
    storage: (stats.storage ?? []).map(toStorageStatsMessage),
    ...(stats.dataPipeline === undefined ? {} : { dataPipeline: toDataPipelineMessage(stats.dataPipeline) }),
  });
}

function toDataPipelineMessage(report: DataPipelineReport): DataPipelineStats {
  return create(DataPipelineStatsSchema, {
    ramBudgetBytes: toWireInt(report.ramBudgetBytes, 'dataPipeline.ramBudgetBytes'),
    cpuBudget: report.cpuBudget,
    modelledBytes: toWireInt(report.modelledBytes, 'dataPipeline.modelledBytes'),
    stages: report.stages.map((stage, i) =>
      create(DataStageStatsSchema, {
        ...stage,
        elementBytes: toWireInt(stage.elementBytes, `dataPipeline.stages[${i}].elementBytes`),
        elements: toWireInt(stage.elements, `dataPipeline.stages[${i}].elements`),
        lastChangeAtElement: toWireInt(
          stage.lastChangeAtElement,
          `dataPipeline.stages[${i}].lastChangeAtElement`,
        ),
      }),
    ),
  });
}

function fromDataPipelineMessage(message: DataPipelineStats): DataPipelineReport {
  return {
    ramBudgetBytes: toSafeNumber(message.ramBudgetBytes, 'dataPipeline.ramBudgetBytes'),
    cpuBudget: message.cpuBudget,
    modelledBytes: toSafeNumber(message.modelledBytes, 'dataPipeline.modelledBytes'),
    stages: message.stages.map((stage, i) => ({
      label: stage.label,
      parallelism: stage.parallelism,
      bufferSize: stage.bufferSize,
      inputPerSecond: stage.inputPerSecond,
      workPerSecond: stage.workPerSecond,
      consumerPerSecond: stage.consumerPerSecond,
      elementBytes: toSafeNumber(stage.elementBytes, `dataPipeline.stages[${i}].elementBytes`),
      elements: toSafeNumber(stage.elements, `dataPipeline.stages[${i}].elements`),
      lastChangeAtElement: toSafeNumber(
        stage.lastChangeAtElement,
        `dataPipeline.stages[${i}].lastChangeAtElement`,
      ),
    })),
  };
}

/** A {@link WorkerStatsReport} from its wire message. */
export function fromWorkerStatsMessage(message: WorkerStats): WorkerStatsReport {
  return {
    backend: message.backend,
    steps: toSafeNumber(message.steps, 'steps'),
    records: {
      training: toSafeNumber(message.trainingRecords, 'trainingRecords'),
      evaluation: toSafeNumber(message.evaluationRecords, 'evaluationRecords'),
      prediction: toSafeNumber(message.predictionRecords, 'predictionRecords'),
    },
    ...(message.lastLoss === undefined ? {} : { lastLoss: message.lastLoss }),
    ...(message.meanLoss === undefined ? {} : { meanLoss: message.meanLoss }),
    lossSteps: toSafeNumber(message.lossSteps, 'lossSteps'),
    elapsedSeconds: message.elapsedSeconds,
    timerSeconds: { ...message.timerSeconds },
    ...(message.storage.length === 0 ? {} : { storage: message.storage.map(fromStorageStatsMessage) }),
    ...(message.dataPipeline === undefined
      ? {}
      : { dataPipeline: fromDataPipelineMessage(message.dataPipeline) }),
  };
}

function toStorageStatsMessage(stats: StorageStatsReport): StorageStats {
  const name = `storage[${stats.scheme}]`;
  const { latency } = stats;
  if (latency.counts.length !== latency.boundsSeconds.length + 1) {
    throw new RangeError(
      `Expected ${latency.boundsSeconds.length + 1} latency counts for ${name} but received ${latency.counts.length}`,
    );
  }
  return create(StorageStatsSchema, {
    scheme: stats.scheme,
    requests: toWireInt(stats.requests, `${name}.requests`),
    bytes: toWireInt(stats.bytes, `${name}.bytes`),
    retries: Object.fromEntries(
      Object.entries(stats.retries).map(([cause, n]) => [cause, toWireInt(n, `${name}.retries.${cause}`)]),
    ),
    failures: toWireInt(stats.failures, `${name}.failures`),
    latencyBoundsSeconds: [...latency.boundsSeconds],
    latencyCounts: latency.counts.map((n, i) => toWireInt(n, `${name}.latency.counts[${i}]`)),
    latencySumSeconds: latency.sumSeconds,
  });
}

function fromStorageStatsMessage(message: StorageStats): StorageStatsReport {
  const name = `storage[${message.scheme}]`;
  if (message.latencyCounts.length !== message.latencyBoundsSeconds.length + 1) {
    throw new RangeError(
      `Expected ${message.latencyBoundsSeconds.length + 1} latency counts for ${name} but received ${message.latencyCounts.length}`,
    );
  }
  return {
    scheme: message.scheme,
    requests: toSafeNumber(message.requests, `${name}.requests`),
    bytes: toSafeNumber(message.bytes, `${name}.bytes`),
    retries: Object.fromEntries(
      Object.entries(message.retries).map(([cause, n]) => [
        cause,
        toSafeNumber(n, `${name}.retries.${cause}`),
      ]),
    ),
    failures: toSafeNumber(message.failures, `${name}.failures`),
    latency: {
      boundsSeconds: [...message.latencyBoundsSeconds],
      counts: message.latencyCounts.map((n, i) => toSafeNumber(n, `${name}.latency.counts[${i}]`)),
      sumSeconds: message.latencySumSeconds,
    },
  };
}
