/** Structured fields attached to a log event. */
export type LogFields = Readonly<Record<string, string | number | boolean | null | undefined>>;

/** Where the worker reports what it does. The CLI prints events as JSON lines or on a progress bar. */
export interface WorkerLogger {
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
}

/** A logger that drops everything: the default for library use. */
export const silentLogger: WorkerLogger = { info() {}, warn() {} };

/** A logger that writes one JSON object per line: `{"ts":..,"level":..,"event":..,...fields}`. */
export function jsonLineLogger(stream: NodeJS.WritableStream, base: LogFields = {}): WorkerLogger {
  const write = (level: string, event: string, fields?: LogFields) => {
    stream.write(`${JSON.stringify({ ts: new Date().toISOString(), level, event, ...base, ...fields })}\n`);
  };
  return {
    info: (event, fields) => write('info', event, fields),
    warn: (event, fields) => write('warn', event, fields),
  };
}
