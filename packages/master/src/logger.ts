/** Where the master's structured log lines go. */
export interface MasterLogger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

function write(
  stream: NodeJS.WritableStream,
  level: string,
  message: string,
  fields?: Record<string, unknown>,
): void {
  const suffix = fields && Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
  stream.write(`${new Date().toISOString()} [edl-master] ${level} ${message}${suffix}\n`);
}

/** Writes `time [edl-master] level message {fields}` lines to a stream (stderr by default). */
export function createStreamLogger(stream: NodeJS.WritableStream = process.stderr): MasterLogger {
  return {
    info: (message, fields) => write(stream, 'info', message, fields),
    warn: (message, fields) => write(stream, 'warn', message, fields),
    error: (message, fields) => write(stream, 'error', message, fields),
  };
}

/** Drops everything (tests, benchmarks). */
export const silentLogger: MasterLogger = { info: () => {}, warn: () => {}, error: () => {} };
