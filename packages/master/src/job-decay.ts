import { type OptimizerConfig, resolveLearningRateDecay } from '@edl/common';
import type { Shard } from '@edl/data';
import type { ParameterStoreOptions } from '@edl/ps';
import { DEFAULT_MINIBATCH_SIZE } from './tasks/settings.js';

/**
 * A learning-rate schedule of a job (`--learning-rate-decay cosine`): Keras' `CosineDecay`, whose
 * `steps` may be left out to decay over the whole job, as a user of `model.fit` would pass the
 * number of updates of all its epochs.
 */
export interface JobLearningRateDecay {
  readonly type: 'cosine';
  /** Updates to decay over; left out, the updates of the whole job (see {@link jobUpdates}). */
  readonly steps?: number;
  /** The final rate as a fraction of the initial one (default 0). */
  readonly alpha?: number;
}

/**
 * The model updates a training job makes: one per minibatch (tasks never cross a shard, so each
 * shard ends with its own partial minibatch), for every epoch, divided by `gradsToWait` in sync mode.
 */
export function jobUpdates(
  shards: readonly Shard[],
  minibatchSize: number,
  numEpochs: number,
  store: ParameterStoreOptions | undefined,
): number {
  const minibatches = shards.reduce((sum, shard) => sum + Math.ceil(shard.count / minibatchSize), 0);
  const perUpdate = store?.mode === 'sync' ? (store.gradsToWait ?? 1) : 1;
  return Math.max(1, Math.ceil((minibatches * numEpochs) / perUpdate));
}

/**
 * The parameter store's options with the job's schedule put on its optimizer. A schedule the model
 * definition's optimizer already names is replaced: the job's flags win, as `--learning-rate` does.
 */
export function withJobDecay(
  store: ParameterStoreOptions | undefined,
  decay: JobLearningRateDecay | undefined,
  job: { readonly shards: readonly Shard[]; readonly minibatchSize: number; readonly numEpochs: number },
): ParameterStoreOptions | undefined {
  if (decay === undefined) return store;
  const steps = decay.steps ?? jobUpdates(job.shards, job.minibatchSize, job.numEpochs, store);
  const optimizer: OptimizerConfig = {
    ...(store?.optimizer ?? { type: 'sgd' }),
    decay: resolveLearningRateDecay(
      { type: decay.type, steps, alpha: decay.alpha ?? 0 },
      '--learning-rate-decay',
    ),
  };
  return { ...store, optimizer };
}

/**
 * The optimizer a job's parameter-server shards apply to embedding rows: the master's store
 * optimizer with the job's schedule over the same updates as the master's, so that a row pushed
 * at model version v moves at the rate the dense variables moved at their update v + 1.
 */
export function jobShardOptimizer(
  options: {
    readonly parameterStore?: ParameterStoreOptions;
    readonly learningRateDecay?: JobLearningRateDecay;
    readonly minibatchSize?: number;
    readonly numEpochs?: number;
  },
  trainingShards: readonly Shard[],
): OptimizerConfig {
  const store = withJobDecay(options.parameterStore, options.learningRateDecay, {
    shards: trainingShards,
    minibatchSize: options.minibatchSize ?? DEFAULT_MINIBATCH_SIZE,
    numEpochs: options.numEpochs ?? 1,
  });
  return store?.optimizer ?? { type: 'sgd' };
}
