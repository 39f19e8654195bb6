import { defaultMaxStaleness, type OptimizerConfig, type ParameterStoreOptions } from '@edl/master';
import type { JobOptions } from './job-options.js';

/**
 * The master's parameter store options of a job: its mode and staleness bound (by default the
 * bound that wastes no gradient with the job's number of workers), and the model definition's
 * optimizer with `--learning-rate` applied over it.
 */
export function parameterStoreOptions(
  options: JobOptions,
  optimizer: OptimizerConfig,
): ParameterStoreOptions {
  return {
    mode: options.mode,
    gradsToWait: options.gradsToWait,
    maxStaleness:
      options.maxStaleness ?? (options.mode === 'async' ? defaultMaxStaleness(options.numWorkers) : 0),
    stalenessModulation: options.stalenessModulation,
    optimizer:
      options.learningRate === undefined ? optimizer : { ...optimizer, learningRate: options.learningRate },
  };
}
