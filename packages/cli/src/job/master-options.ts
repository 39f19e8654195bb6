/**
 * The master's options of every command that runs a master: `edl train | evaluate | predict`,
 * `edl k8s master` (the master pod) and `edl master`. Each gives its flags here and adds only what
 * is its own (readers, logger, workers as processes or pods); @edl/master's `masterOptionsFor`
 * maps the settings, optimizer included.
 */
import {
  type JobMasterOptions,
  type JobSettings,
  type JobType,
  masterOptionsFor,
  type OptimizerConfig,
  type OptimizerSpecLike,
  optimizerConfigFromSpec,
  type ParameterStoreOptions,
  parameterStoreOptionsFor,
} from '@edl/master';
import { normalizeLocation } from '@edl/storage';
import type { JobOptions } from './job-options.js';

/**
 * Paths are resolved here, so that the master's messages and checkpoints name them whole; URLs
 * (`s3://bucket/prefix/`) stay as they are.
 */
function resolved(file: string | undefined): string | undefined {
  return file === undefined ? undefined : normalizeLocation(file);
}

/** The job settings of the job options, with `optimizer` (the model definition's) under --learning-rate. */
export function jobSettings(options: JobOptions, jobType: JobType, optimizer: OptimizerConfig): JobSettings {
  return {
    jobType,
    minibatchSize: options.minibatchSize,
    numMinibatchesPerTask: options.numMinibatchesPerTask,
    numEpochs: options.numEpochs,
    evaluationSteps: options.evaluationSteps,
    shuffle: options.shuffle,
    seed: options.seed,
    leaseMs: options.leaseMs,
    maxTaskFailures: options.maxTaskFailures,
    mode: options.mode,
    gradsToWait: options.gradsToWait,
    maxStaleness: options.maxStaleness,
    stalenessModulation: options.stalenessModulation,
    numWorkers: options.numWorkers,
    optimizer,
    learningRate: options.learningRate,
    learningRateDecay: options.learningRateDecay,
    checkpointDir: resolved(options.checkpointDir),
    checkpointSteps: options.checkpointSteps,
    // Only a job with shards places its dense variables (without, the master holds them).
    denseOn: options.numPs > 0 ? options.denseOn : undefined,
    modelCheckpoint: resolved(options.modelCheckpoint),
    metricsFile: resolved(options.metricsFile),
    tensorboardDir: resolved(options.tensorboardDir),
    http: {
      host: options.httpHost,
      port: options.httpPort,
      ...(options.metricsToken === undefined ? {} : { metricsToken: options.metricsToken }),
    },
  };
}

/**
 * The master options of a job run by `edl train | evaluate | predict` or `edl k8s master`: the job
 * options, and the optimizer of the model definition at `source` (an unknown parameter fails).
 */
export function jobMasterOptions(
  options: JobOptions,
  jobType: JobType,
  optimizer: OptimizerSpecLike,
  source: string,
): JobMasterOptions {
  return masterOptionsFor(jobSettings(options, jobType, optimizerConfigFromSpec(optimizer, source)));
}

/** The parameter store's part of {@link jobMasterOptions}, for an optimizer already mapped. */
export function parameterStoreOptions(
  options: JobOptions,
  optimizer: OptimizerConfig,
): ParameterStoreOptions {
  return parameterStoreOptionsFor(jobSettings(options, 'training', optimizer));
}

/** `edl master`'s flags (checked), by their names. */
export interface MasterCommandFlags {
  readonly 'minibatch-size'?: number;
  readonly 'num-minibatches-per-task'?: number;
  readonly 'num-epochs'?: number;
  readonly 'evaluation-steps'?: number;
  readonly shuffle?: boolean;
  readonly seed?: number;
  readonly 'lease-ms'?: number;
  readonly 'max-task-failures'?: number;
  readonly mode?: 'sync' | 'async';
  readonly 'grads-to-wait'?: number;
  readonly 'max-staleness'?: number;
  readonly 'staleness-modulation'?: boolean;
  readonly 'num-workers'?: number;
  readonly optimizer?: OptimizerConfig['type'];
  readonly 'learning-rate'?: number;
  readonly momentum?: number;
  readonly 'checkpoint-dir'?: string;
  readonly 'checkpoint-steps'?: number;
  readonly 'model-checkpoint'?: string;
  readonly 'metrics-file'?: string;
  readonly 'tensorboard-dir'?: string;
  readonly 'http-port'?: number;
  readonly 'http-host'?: string;
  readonly 'metrics-token'?: string;
}

/**
 * The master options of `edl master`: its flags name the optimizer (`--optimizer`, `--momentum`)
 * where a job's model definition does; what they leave out takes the master's defaults.
 */
export function masterCommandOptions(flags: MasterCommandFlags, jobType: JobType): JobMasterOptions {
  const type = flags.optimizer ?? 'sgd';
  const optimizer: OptimizerConfig =
    type === 'momentum' && flags.momentum !== undefined ? { type, momentum: flags.momentum } : { type };
  return masterOptionsFor({
    jobType,
    minibatchSize: flags['minibatch-size'],
    numMinibatchesPerTask: flags['num-minibatches-per-task'],
    numEpochs: flags['num-epochs'],
    evaluationSteps: flags['evaluation-steps'],
    shuffle: flags.shuffle ?? false,
    seed: flags.seed,
    leaseMs: flags['lease-ms'],
    maxTaskFailures: flags['max-task-failures'],
    mode: flags.mode ?? 'async',
    gradsToWait: flags['grads-to-wait'],
    maxStaleness: flags['max-staleness'],
    stalenessModulation: flags['staleness-modulation'] === true ? true : undefined,
    numWorkers: flags['num-workers'] ?? 0,
    optimizer,
    learningRate: flags['learning-rate'],
    checkpointDir: flags['checkpoint-dir'],
    checkpointSteps: flags['checkpoint-steps'],
    modelCheckpoint: flags['model-checkpoint'],
    metricsFile: flags['metrics-file'],
    tensorboardDir: flags['tensorboard-dir'],
    http: {
      ...(flags['http-port'] === undefined ? {} : { port: flags['http-port'] }),
      ...(flags['http-host'] === undefined ? {} : { host: flags['http-host'] }),
      ...(flags['metrics-token'] === undefined ? {} : { metricsToken: flags['metrics-token'] }),
    },
  });
}
