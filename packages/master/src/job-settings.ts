/**
 * The one mapping from a job's settings (what `edl train`, `edl master` and the Kubernetes master
 * pod gather from their flags and the model definition) to the options of {@link startMaster}:
 * tasks, parameter store with its optimizer, checkpoints, metrics and the live view. Front ends
 * add the readers, the logger and the workers (local processes or pods).
 */

import { checkOneOf, checkOptimizerParams, OPTIMIZER_TYPES, type OptimizerConfig } from '@edl/common';
import { defaultMaxStaleness, type ParameterStoreMode, type ParameterStoreOptions } from '@edl/ps';
import type { DensePlacement } from './checkpoint.js';
import type { JobLearningRateDecay } from './job-decay.js';
import type { StartMasterOptions } from './start-master.js';
import type { JobType } from './tasks/types.js';

/**
 * An optimizer as a model definition names it (`@edl/worker`'s `OptimizerSpec`): `sgd`,
 * `momentum` or `adam` and its parameters, numbers (`nesterov`: non-zero is true).
 */
export interface OptimizerSpecLike {
  readonly name: string;
  readonly params?: Readonly<Record<string, number | boolean>>;
}

/**
 * The master's optimizer configuration from a model definition's `optimizer`. A parameter that
 * the optimizer does not take (`learning_rate` for `learningRate`) is a TypeError naming `source`
 * rather than a value silently ignored.
 */
export function optimizerConfigFromSpec(spec: OptimizerSpecLike, source: string): OptimizerConfig {
  const type = checkOneOf(spec?.name, `optimizer.name in ${source}`, OPTIMIZER_TYPES);
  const params = spec.params ?? {};
  checkOptimizerParams(type, Object.keys(params), `the ${type} optimizer in ${source}`);
  const { nesterov, ...numbers } = params;
  return {
    type,
    ...numbers,
    ...(nesterov === undefined ? {} : { nesterov: Boolean(nesterov) }),
  } as OptimizerConfig;
}

/**
 * A job's settings, checked by the front end. Left out, a setting takes the master's default;
 * `numWorkers` only sets the default staleness bound of async mode.
 */
export interface JobSettings {
  readonly jobType: JobType;
  readonly minibatchSize?: number;
  readonly numMinibatchesPerTask?: number;
  readonly numEpochs?: number;
  readonly evaluationSteps?: number;
  readonly shuffle?: boolean;
  readonly seed?: number;
  readonly leaseMs?: number;
  readonly maxTaskFailures?: number;
  /** Default async. */
  readonly mode?: ParameterStoreMode;
  readonly gradsToWait?: number;
  /** Default: {@link defaultMaxStaleness} of `numWorkers` in async mode, 0 in sync mode. */
  readonly maxStaleness?: number;
  readonly stalenessModulation?: boolean;
  readonly numWorkers?: number;
  /** The model definition's (or the flags') optimizer. */
  readonly optimizer: OptimizerConfig;
  /** Overrides the optimizer's learning rate (`--learning-rate`). */
  readonly learningRate?: number;
  /** A learning-rate schedule over the job (`--learning-rate-decay`). */
  readonly learningRateDecay?: JobLearningRateDecay;
  readonly checkpointDir?: string;
  readonly checkpointSteps?: number;
  /** With parameter-server shards: where the dense variables are (`--dense-on`). */
  readonly denseOn?: DensePlacement;
  readonly modelCheckpoint?: string;
  readonly metricsFile?: string;
  readonly tensorboardDir?: string;
  /** The live view; left out, it is not served. */
  readonly http?: StartMasterOptions['http'];
}

/** The part of {@link StartMasterOptions} that {@link JobSettings} give. */
export type JobMasterOptions = Pick<
  StartMasterOptions,
  | 'jobType'
  | 'minibatchSize'
  | 'numMinibatchesPerTask'
  | 'numEpochs'
  | 'evaluationSteps'
  | 'shuffle'
  | 'seed'
  | 'leaseMs'
  | 'maxTaskFailures'
  | 'parameterStore'
  | 'learningRateDecay'
  | 'checkpointDir'
  | 'checkpointSteps'
  | 'denseOn'
  | 'modelCheckpoint'
  | 'metricsFile'
  | 'tensorboardDir'
  | 'http'
>;

/** Copies the keys whose value is defined: a left-out setting keeps the master's default. */
function defined<T extends object>(values: T): Partial<T> {
  return Object.fromEntries(Object.entries(values).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * The parameter store's options: its mode and staleness bound (by default the bound that wastes
 * no gradient with the job's number of workers), and the optimizer with `learningRate` over it.
 */
export function parameterStoreOptionsFor(settings: JobSettings): ParameterStoreOptions {
  const mode = settings.mode ?? 'async';
  return {
    mode,
    ...defined({ gradsToWait: settings.gradsToWait }),
    maxStaleness:
      settings.maxStaleness ?? (mode === 'async' ? defaultMaxStaleness(settings.numWorkers ?? 0) : 0),
    ...defined({ stalenessModulation: settings.stalenessModulation }),
    optimizer:
      settings.learningRate === undefined
        ? settings.optimizer
        : { ...settings.optimizer, learningRate: settings.learningRate },
  };
}

/** The master's options of a job with these settings. */
export function masterOptionsFor(settings: JobSettings): JobMasterOptions {
  return {
    jobType: settings.jobType,
    ...defined({
      minibatchSize: settings.minibatchSize,
      numMinibatchesPerTask: settings.numMinibatchesPerTask,
      numEpochs: settings.numEpochs,
      evaluationSteps: settings.evaluationSteps,
      shuffle: settings.shuffle,
      seed: settings.seed,
      leaseMs: settings.leaseMs,
      maxTaskFailures: settings.maxTaskFailures,
    }),
    parameterStore: parameterStoreOptionsFor(settings),
    ...defined({
      learningRateDecay: settings.learningRateDecay,
      checkpointDir: settings.checkpointDir,
      checkpointSteps: settings.checkpointSteps,
      denseOn: settings.denseOn,
      modelCheckpoint: settings.modelCheckpoint,
      metricsFile: settings.metricsFile,
      tensorboardDir: settings.tensorboardDir,
      http: settings.http,
    }),
  };
}
