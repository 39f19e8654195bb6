/**
 * The JSON log line of {@link createLogger}, byte for byte what pino 10 wrote for the same options
 * (level labels, ISO time, base bindings first, `msg` last) without its 12 packages: the loggers
 * need only this serialization, never pino's transports, redaction or worker threads.
 */

/** Levels of a log line, least severe first, with pino's numbers (only their order matters here). */
export const LEVEL_VALUES = { debug: 20, info: 30, warn: 40, error: 50, silent: Number.POSITIVE_INFINITY };

/** Binding names pino reserved for its own options; they never reached a line. */
const RESERVED_BINDINGS = new Set(['level', 'serializers', 'formatters', 'customLevels']);

/**
 * `value` as JSON, or undefined where JSON has no value (undefined, functions, symbols): the field is
 * then left out. A bigint is a JSON number; circular references become `"[Circular]"` (and a bigint
 * inside an object a string) instead of failing the log call.
 */
function jsonOf(key: string, value: unknown): string | undefined {
  // pino's one default serializer: an Error under `err` keeps its type, message and stack.
  if (key === 'err' && value instanceof Error) value = errorFields(value);
  if (typeof value === 'bigint') return value.toString();
  try {
    return JSON.stringify(value);
  } catch {
    const ancestors: unknown[] = [];
    return JSON.stringify(value, function (this: unknown, _key: string, nested: unknown) {
      if (typeof nested === 'bigint') return nested.toString();
      if (typeof nested !== 'object' || nested === null) return nested;
      while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
      if (ancestors.includes(nested)) return '[Circular]';
      ancestors.push(nested);
      return nested;
    });
  }
}

function errorFields(error: Error): Record<string, unknown> {
  const fields: Record<string, unknown> = {
    type: error.constructor.name,
    message: error.message,
    stack: error.stack,
  };
  for (const [key, value] of Object.entries(error)) if (!(key in fields)) fields[key] = value;
  return fields;
}

/** `,"key":value` for each field that has a JSON value, in the object's order. */
export function jsonFields(fields: Readonly<Record<string, unknown>>, bindings = false): string {
  let out = '';
  for (const key of Object.keys(fields)) {
    const value = fields[key];
    if (value === undefined || (bindings && RESERVED_BINDINGS.has(key))) continue;
    const json = jsonOf(key, value);
    if (json !== undefined) out += `,${JSON.stringify(key)}:${json}`;
  }
  return out;
}

/**
 * One line: `{"level":"info","time":"<ISO>"` + `bindings` (already `jsonFields`) + `fields` +
 * `,"msg":"<message>"}` and a newline.
 */
export function logLine(
  level: string,
  bindings: string,
  message: string,
  fields: Readonly<Record<string, unknown>> | undefined,
): string {
  const head = `{"level":${JSON.stringify(level)},"time":"${new Date().toISOString()}"${bindings}`;
  const own = fields === undefined ? '' : jsonFields(fields);
  return `${head}${own},"msg":${JSON.stringify(message)}}\n`;
}
