import {
  createLogger,
  type Logger,
  type LoggerOptions,
  type LogStream,
  silentLogger as silent,
} from '@edl/proto';

/** Where the master's structured log lines go: the processes' one logger (@edl/proto's `Logger`). */
export interface MasterLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/**
 * The master's logger on a stream (stderr by default): readable lines on a terminal, JSON
 * lines otherwise; `options` set the level, quiet mode and fields every line carries (the job id).
 */
export function createStreamLogger(
  stream: LogStream = process.stderr,
  options: Omit<LoggerOptions, 'stream'> = {},
): Logger {
  return createLogger({ ...options, stream, bindings: { source: 'master', ...options.bindings } });
}

/** Drops everything (tests, benchmarks). */
export const silentLogger: MasterLogger = silent;
