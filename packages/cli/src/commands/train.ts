import type { Command } from '../command.js';
import { JOB_OPTIONS_HELP, parseJobOptions } from '../job/job-options.js';

const usage = `Usage: edl train --model-def FILE --training-data ORIGIN [options]

Trains a model with a master and --num-workers local worker processes: dynamic sharding, a
shared prefetching dataset per worker, gradients applied by the master's parameter store. With
--validation-data it evaluates every --evaluation-steps model versions and at the end. Shows a
progress bar on a terminal (JSON lines otherwise) and ElasticDL's timing table at the end.

--model-def is a TypeScript or JavaScript module exporting model, loss, optimizer, datasetFn and
evalMetrics (see @edl/worker's ModelDefinition), or a zoo name: cifar10, cifar10-small, census.

Example:
  edl train --model-def cifar10-small --training-data ./data/train --validation-data ./data/valid \\
    --num-workers 2 --minibatch-size 64 --num-epochs 2 --checkpoint-dir ./ckpt

${JOB_OPTIONS_HELP}

Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments.`;

/** `edl train`: a training (or training-with-evaluation) job. */
export const command: Command = {
  name: 'train',
  usage,
  async run(argv, io) {
    const options = parseJobOptions(argv);
    // Loaded here so that `edl train --help` does not load the master, the worker and TensorFlow.js.
    const { runJob } = await import('../job/run-job.js');
    return (await runJob('train', options, io)).exitCode;
  },
};
