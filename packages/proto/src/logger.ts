import { jsonFields, LEVEL_VALUES, logLine } from './log-line.js';

/** The levels of {@link createLogger}, least severe first; `silent` logs nothing. */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error', 'silent'] as const;

/** A level of {@link LOG_LEVELS}. */
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Structured fields of a log line. `job`, `worker` and `task` name the ids the line is about. */
export type LogFields = Readonly<Record<string, unknown>>;

/**
 * The one logger of every elasticdl-ts process (master, workers, CLI): `message` is the line's
 * text (an event name such as `task.done`, or a sentence), `fields` its structured data.
 */
export interface Logger {
  debug(message: string, fields?: LogFields): void;
  info(message: string, fields?: LogFields): void;
  warn(message: string, fields?: LogFields): void;
  error(message: string, fields?: LogFields): void;
  /** A logger whose lines all carry `bindings` as well (e.g. `{ worker: 'worker-3' }`). */
  child(bindings: LogFields): Logger;
}

/** Where log lines go: a process stream, or anything that takes lines (a progress bar's log). */
export interface LogStream {
  write(line: string): unknown;
  readonly isTTY?: boolean;
}

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  /** Lines below this level are dropped (default `info`). */
  readonly level?: LogLevel;
  /** Errors only (the final summary of a command is not a log line and still prints). */
  readonly quiet?: boolean;
  /** Where lines go (default: stderr). */
  readonly stream?: LogStream;
  /**
   * `json`: one JSON object per line (`{"level":"info","time":"...","msg":"...",...}`);
   * `pretty`: a readable line per event for people. Default: pretty on a terminal, JSON otherwise.
   */
  readonly format?: 'json' | 'pretty';
  /** Fields every line carries (e.g. `{ job: 'mnist', worker: 'worker-1' }`). */
  readonly bindings?: LogFields;
}

const LEVEL_COLORS: Record<string, string> = {
  debug: '\x1b[90m',
  info: '\x1b[32m',
  warn: '\x1b[33m',
  error: '\x1b[31m',
  fatal: '\x1b[31m',
};
const IDS = ['job', 'worker', 'task'] as const;
const HIDDEN = new Set(['level', 'time', 'msg', 'pid', ...IDS]);

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /[\s"=]/.test(value) || value === '' ? JSON.stringify(value) : value;
  if (typeof value === 'number')
    return Number.isInteger(value) ? String(value) : String(Number(value.toPrecision(6)));
  return JSON.stringify(value);
}

/**
 * Turns one JSON log line into `12:03:04.567 INFO  [job worker task] message key=value ...`, with
 * colours when `color` is set.
 */
export function formatPrettyLine(json: string, color: boolean): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json;
  }
  const level = String(entry.level ?? 'info');
  const time = typeof entry.time === 'string' ? entry.time.slice(11, 23) : '';
  const ids = IDS.filter((k) => entry[k] !== undefined && entry[k] !== null).map((k) =>
    k === 'task' ? `task ${String(entry[k])}` : String(entry[k]),
  );
  const fields = Object.entries(entry)
    .filter(([k, v]) => !HIDDEN.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${formatValue(v)}`);
  const paint = (code: string, text: string) => (color ? `${code}${text}\x1b[0m` : text);
  return [
    paint('\x1b[90m', time),
    paint(LEVEL_COLORS[level] ?? '', level.toUpperCase().padEnd(5)),
    ids.length > 0 ? paint('\x1b[36m', `[${ids.join(' ')}]`) : '',
    String(entry.msg ?? ''),
    fields.length > 0 ? paint('\x1b[90m', fields.join(' ')) : '',
  ]
    .filter((p) => p !== '')
    .join(' ');
}

/** Where the JSON lines go: the stream itself, or each line rewritten as a readable one. */
function destinationOf(stream: LogStream, format: 'json' | 'pretty', color: boolean): (line: string) => void {
  if (format === 'json') return (line) => void stream.write(line);
  return (line) => void stream.write(`${formatPrettyLine(line.trimEnd(), color)}\n`);
}

/** A logger writing lines at `threshold` and above, each carrying `bindings` (as `jsonFields`). */
function lineLogger(write: (line: string) => void, threshold: number, bindings: string): Logger {
  const at =
    (level: 'debug' | 'info' | 'warn' | 'error') =>
    (message: string, fields?: LogFields): void => {
      if (LEVEL_VALUES[level] >= threshold) write(logLine(level, bindings, message, fields));
    };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => lineLogger(write, threshold, bindings + jsonFields(more, true)),
  };
}

/** Checks a `--log-level` value. */
export function parseLogLevel(value: string, name = 'logLevel'): LogLevel {
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new RangeError(`Expected one of ${LOG_LEVELS.join(', ')} for ${name} but received '${value}'`);
  }
  return value as LogLevel;
}

/**
 * Creates the logger of a process: JSON lines off a terminal, readable lines on one.
 *
 * ```ts
 * const log = createLogger({ level: 'info', bindings: { job: 'mnist', worker: 'worker-0' } });
 * log.info('task.done', { task: 12, records: 512 });
 * ```
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const stream = options.stream ?? process.stderr;
  const level = options.quiet ? 'error' : parseLogLevel(options.level ?? 'info', 'level');
  const isTTY = stream.isTTY === true;
  const format = options.format ?? (isTTY ? 'pretty' : 'json');
  return lineLogger(
    destinationOf(stream, format, isTTY),
    LEVEL_VALUES[level],
    jsonFields({ pid: process.pid, ...options.bindings }, true),
  );
}

/** A logger that drops everything (library use, tests). */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silentLogger,
};
