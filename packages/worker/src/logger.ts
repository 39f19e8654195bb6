import { createLogger, type LoggerOptions, silentLogger as silent } from '@edl/proto';

/** Structured fields attached to a log event. */
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

/** Where the worker reports what it does. The CLI prints events as JSON lines or on a progress bar. */
export interface WorkerLogger {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
}

/** A logger that drops everything: the default for library use. */
export const silentLogger: WorkerLogger = silent;

/**
 * The worker's logger writing one JSON object per line:
 * `{"level":"info","time":"...","msg":"task.done",...base,...fields}`, `base` naming the job and
 * the worker. `options` set the level and quiet mode.
 */
export function jsonLineLogger(
  stream: NodeJS.WritableStream,
  base: LogFields = {},
  options: Pick<LoggerOptions, 'level' | 'quiet'> = {},
): WorkerLogger {
  return createLogger({ ...options, stream, format: 'json', bindings: base });
}
