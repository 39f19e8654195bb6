import type { Command } from '../command.js';
import { JOB_OPTIONS_HELP, parseJobOptions } from '../job/job-options.js';

const usage = `Usage: edl evaluate --model-def FILE --validation-data ORIGIN --model-checkpoint PATH [options]

Evaluates a trained model (the newest checkpoint in PATH, or the checkpoint file PATH) with local
workers and prints the model's evalMetrics (--metrics-file also writes them as JSON lines).

Example:
  edl evaluate --model-def census --validation-data valid.csv --data-reader-params '{"header":true}' \\
    --model-checkpoint ./ckpt

${JOB_OPTIONS_HELP}

Exit status: 0 the job succeeded, 1 it failed, 2 bad arguments.`;

/** `edl evaluate`: an evaluation-only job. */
export const command: Command = {
  name: 'evaluate',
  usage,
  async run(argv, io) {
    const options = parseJobOptions(argv);
    // Loaded here so that `edl evaluate --help` does not load the master, the worker and TensorFlow.js.
    const { runJob } = await import('../job/run-job.js');
    return (await runJob('evaluate', options, io)).exitCode;
  },
};
