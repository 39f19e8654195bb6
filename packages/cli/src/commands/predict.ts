import type { Command } from '../command.js';
import { CHECKPOINT_SHARDS_HELP } from '../job/checkpoint-shards.js';
import { runJobCommand } from '../job/job-command.js';
import { JOB_OPTIONS_HELP } from '../job/job-options.js';

const usage = `Usage: edl predict --model-def FILE --prediction-data ORIGIN --model-checkpoint PATH [--output FILE]

Runs a trained model over the prediction data with local workers and writes one JSON line per
record to --output (default predictions.jsonl): {"shard", "record", "output"}, ordered by shard
and record. A model definition with a predictionOutputsProcessor handles the outputs itself.

${CHECKPOINT_SHARDS_HELP}

Example:
  edl predict --model-def cifar10-small --prediction-data ./data/test --model-checkpoint ./ckpt \\
    --output predictions.jsonl

${JOB_OPTIONS_HELP}

Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments.`;

/** `edl predict`: a prediction-only job. */
export const command: Command = {
  name: 'predict',
  usage,
  run: (argv, io) => runJobCommand('predict', argv, io),
};
