// Checks a task manager's options once and resolves their defaults; identifies the job's data.
import { checkInteger, checkNonEmptyString, checkOneOf } from '@edl/common';
import type { Shard } from '@edl/data';
import {
  JOB_TYPES,
  type JobType,
  type RecordsByKind,
  type TaskManagerEvent,
  type TaskManagerOptions,
} from './types.js';

/** {@link TaskManagerOptions} checked, with every default filled in. */
export interface TaskManagerSettings {
  readonly jobType: JobType;
  readonly recordsPerTask: number;
  readonly numEpochs: number;
  readonly leaseMs: number;
  readonly maxTaskFailures: number;
  readonly evaluationSteps: number;
  /** Copies of the shards of each kind (none for a kind the job does not read). */
  readonly shards: RecordsByKind<readonly Shard[]>;
  readonly shuffle: boolean;
  readonly seed: number;
  readonly trainEndCallback: boolean;
  readonly modelVersion: () => number;
  readonly now: () => number;
  readonly onEvent: (event: TaskManagerEvent) => void;
}

/** Records per minibatch when a job names none. */
export const DEFAULT_MINIBATCH_SIZE = 64;

/** Checks `options` in the order of their declaration, so the first wrong one is the one named. */
export function resolveTaskManagerOptions(options: TaskManagerOptions): TaskManagerSettings {
  const jobType = checkOneOf(options.jobType, 'jobType', JOB_TYPES);
  const minibatchSize = checkInteger(options.minibatchSize ?? DEFAULT_MINIBATCH_SIZE, 'minibatchSize', 1);
  const perTask = checkInteger(options.numMinibatchesPerTask ?? 8, 'numMinibatchesPerTask', 1);
  const numEpochs = checkInteger(options.numEpochs ?? 1, 'numEpochs', 1);
  const leaseMs = checkInteger(options.leaseMs ?? 30_000, 'leaseMs', 1);
  const maxTaskFailures = checkInteger(options.maxTaskFailures ?? 3, 'maxTaskFailures', 1);
  const evaluationSteps = checkInteger(options.evaluationSteps ?? 0, 'evaluationSteps', 0);
  const shards: RecordsByKind<readonly Shard[]> = {
    training: checkShards(options.trainingShards ?? [], 'trainingShards'),
    evaluation: checkShards(options.evaluationShards ?? [], 'evaluationShards'),
    prediction: checkShards(options.predictionShards ?? [], 'predictionShards'),
  };
  const needs: Record<JobType, Array<keyof RecordsByKind<unknown>>> = {
    training: ['training'],
    'training-with-evaluation': ['training', 'evaluation'],
    evaluation: ['evaluation'],
    prediction: ['prediction'],
  };
  for (const kind of needs[jobType]) {
    if (shards[kind].length === 0) {
      throw new TypeError(
        `Expected at least one shard for ${kind}Shards but received none (job type ${jobType})`,
      );
    }
  }
  return {
    jobType,
    recordsPerTask: minibatchSize * perTask,
    numEpochs,
    leaseMs,
    maxTaskFailures,
    evaluationSteps,
    shards,
    shuffle: options.shuffle ?? false,
    seed: checkInteger(options.seed ?? 0, 'seed', 0, 0xffffffff),
    trainEndCallback: options.trainEndCallback ?? true,
    modelVersion: options.modelVersion ?? (() => 0),
    now: options.now ?? Date.now,
    onEvent: options.onEvent ?? (() => {}),
  };
}

/** Identifies the data a checkpoint belongs to: shard names and sizes and the task size. */
export function dataFingerprint(
  jobType: JobType,
  recordsPerTask: number,
  shards: RecordsByKind<readonly Shard[]>,
): string {
  const part = (list: readonly Shard[]) => list.map((s) => `${s.name}:${s.start}+${s.count}`).join(',');
  return [
    jobType,
    recordsPerTask,
    part(shards.training),
    part(shards.evaluation),
    part(shards.prediction),
  ].join('|');
}

/** Records in `shards`, all together. */
export function recordsIn(shards: readonly Shard[]): number {
  return shards.reduce((sum, s) => sum + s.count, 0);
}

/** True for the job types that train. */
export function trains(jobType: JobType): boolean {
  return jobType === 'training' || jobType === 'training-with-evaluation';
}

function checkShards(shards: readonly Shard[], name: string): readonly Shard[] {
  if (!Array.isArray(shards))
    throw new TypeError(`Expected an array of shards for ${name} but received ${typeof shards}`);
  shards.forEach((shard, i) => {
    checkNonEmptyString(shard?.name, `${name}[${i}].name`);
    checkInteger(shard.start, `${name}[${i}].start`, 0);
    checkInteger(shard.count, `${name}[${i}].count`, 0);
  });
  return shards.map((s) => ({ name: s.name, start: s.start, count: s.count }));
}
