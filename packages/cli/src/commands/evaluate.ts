import type { Command } from '../command.js';
import { CHECKPOINT_SHARDS_HELP } from '../job/checkpoint-shards.js';
import { runJobCommand } from '../job/job-command.js';
import { JOB_OPTIONS_HELP } from '../job/job-options.js';

const usage = `Usage: edl evaluate --model-def FILE --validation-data ORIGIN --model-checkpoint PATH [options]

Evaluates a trained model (the newest checkpoint in PATH, or the checkpoint file PATH) with local
workers and prints the model's evalMetrics (--metrics-file also writes them as JSON lines).

${CHECKPOINT_SHARDS_HELP}

Example:
  edl evaluate --model-def census --validation-data valid.csv --data-reader-params '{"header":true}' \\
    --model-checkpoint ./ckpt

${JOB_OPTIONS_HELP}

Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments.`;

/** `edl evaluate`: an evaluation-only job. */
export const command: Command = {
  name: 'evaluate',
  usage,
  run: (argv, io) => runJobCommand('evaluate', argv, io),
};
