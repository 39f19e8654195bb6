import type { Command } from '../command.js';
import { JOB_OPTIONS_HELP, jobTypeFor, parseJobOptions } from '../job/job-options.js';
import { trainOutput } from '../job/train-output.js';

const usage = `Usage: edl train --model-def FILE --training-data ORIGIN [options]

Trains a model with a master and --num-workers local worker processes: dynamic sharding, a
shared prefetching dataset per worker, gradients applied by the master's parameter store. With
--validation-data it evaluates every --evaluation-steps model versions and at the end. Shows a
progress bar on a terminal (JSON lines otherwise) and the timing table at the end.

--model-def is a TypeScript or JavaScript module exporting model, loss, optimizer, datasetFn and
evalMetrics (see @edl/worker's ModelDefinition), or a zoo name: mnist, cifar10, cifar10-small,
census.

The trained model is always kept: checkpoints go to --checkpoint-dir (default
./edl-output/<job>/checkpoints), and at the end the model is exported in TensorFlow.js's Layers
format (model.json + weights.bin, see 'edl export') to <checkpoint-dir>/model (default
./edl-output/<job>/model).

Example:
  edl train --model-def mnist --training-data ./data/train --validation-data ./data/test \\
    --num-workers 2 --minibatch-size 64 --num-epochs 2 --checkpoint-dir ./ckpt

${JOB_OPTIONS_HELP}

Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments.`;

/** `edl train`: a training (or training-with-evaluation) job, then the model exported. */
export const command: Command = {
  name: 'train',
  usage,
  async run(argv, io) {
    // Every option is checked before the job runner (TensorFlow.js, gRPC) loads.
    const options = parseJobOptions(argv);
    jobTypeFor('train', options);
    // The exporter (TensorFlow.js) loads after the job: the workers start before anything heavy loads.
    const { runJob } = await import('../job/run-job.js');
    const output = trainOutput(options);
    if (output.defaultRoot !== undefined) {
      io.stderr.write(`no --checkpoint-dir: checkpoints and the trained model go to ${output.defaultRoot}\n`);
    }
    const outcome = await runJob('train', { ...options, checkpointDir: output.checkpointDir }, io);
    if (outcome.exitCode !== 0) return outcome.exitCode;
    const { exportModel } = await import('../job/export-model.js');
    const exported = await exportModel(options.modelDef, output.checkpointDir, output.modelDir);
    io.stdout.write(
      `model exported in the TensorFlow.js format: ${exported.modelJson} (load it with tf.loadLayersModel)\n`,
    );
    return 0;
  },
};
