/**
 * The zoo's CIFAR-10 preprocessing, run `args.repeat` times per minibatch (the last result is
 * kept): a load knob for bench/worker-pipeline.mjs that gives our input work the share of the step
 * that the seed's 2019 worker had (48%), to measure what overlap does at that balance. Both loops
 * run it, the serialized one on the main thread and the pipelined one on threads.
 */
import { preprocessCifar10Batch } from '../../packages/model-zoo/workers/cifar10-preprocess.mjs';

export function costlyPreprocess(records, args, context) {
  let result;
  for (let i = 0; i < Math.max(1, args.repeat); i++) result = preprocessCifar10Batch(records, args, context);
  return result;
}
