/** Longest string, or JSON of an object, quoted whole in a message before it is cut. */
const MAX_TEXT = 60;

function clip(text: string): string {
  return text.length > MAX_TEXT ? `${text.slice(0, MAX_TEXT)}...` : text;
}

/**
 * Renders a received value for an error message, short and unambiguous: strings in JSON quotes
 * (`"lz4"`, so `"0"` and `0` differ), numbers, booleans, `null` and `undefined` as written, bigints
 * as `5n`, arrays and typed arrays by size, plain objects as short JSON and class instances by their
 * class. Never the whole of a big value.
 */
export function describeValue(value: unknown): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(clip(value));
    case 'bigint':
      return `${value}n`;
    case 'function':
      return value.name === '' ? 'a function' : `function ${value.name}`;
    case 'symbol':
      return value.toString();
    case 'object':
      break;
    default:
      return String(value);
  }
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of length ${value.length}`;
  if (ArrayBuffer.isView(value)) return `a ${value.constructor.name} of ${value.byteLength} bytes`;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name = (value as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `an instance of ${name}` : 'an object';
  }
  try {
    return clip(JSON.stringify(value));
  } catch {
    return 'an object';
  }
}

/** The one message format of argument errors: "Expected <what> for <name> but received <value>". */
export function expectedMessage(what: string, name: string, value: unknown): string {
  return `Expected ${what} for ${name} but received ${describeValue(value)}`;
}
