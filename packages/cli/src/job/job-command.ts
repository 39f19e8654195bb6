import type { CommandIO } from '../command.js';
import { type JobKind, jobTypeFor, parseJobOptions } from './job-options.js';

/**
 * `edl train | evaluate | predict`: checks every option first, then loads the job runner (and
 * with it TensorFlow.js and gRPC), so that a bad argument fails at once.
 */
export async function runJobCommand(kind: JobKind, argv: string[], io: CommandIO): Promise<number> {
  const options = parseJobOptions(argv);
  jobTypeFor(kind, options);
  const { runJob } = await import('./run-job.js');
  return (await runJob(kind, options, io)).exitCode;
}
