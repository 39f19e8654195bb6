import { EdlError, type EdlErrorOptions } from '@edl/common';

/** One `edl` sub-command. Each lives in `src/commands/<name>.ts` and exports it as `command`. */
export interface Command {
  readonly name: string;
  /** Full help text for `edl <name> --help`. */
  readonly usage: string;
  /** Runs with the arguments after the command name; resolves to the process exit code. */
  run(argv: string[], io: CommandIO): Promise<number>;
}

/** Where a command writes: injectable so tests can capture output without spawning. */
export interface CommandIO {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
  readonly isTTY: boolean;
}

/**
 * A bad command line. The dispatcher prints its message and the command's usage on one line each,
 * never a stack trace, and exits with status 2.
 */
export class UsageError extends EdlError<'USAGE'> {
  override readonly name = 'UsageError';
  constructor(message: string, options?: EdlErrorOptions) {
    super('USAGE', message, options);
  }
}
