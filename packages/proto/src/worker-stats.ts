import { create } from '@bufbuild/protobuf';
import { type WorkerStats, WorkerStatsSchema } from './generated/edl/v1/master_pb.js';
import { toSafeNumber, toWireInt } from './wire-numbers.js';

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
  });
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
  };
}
