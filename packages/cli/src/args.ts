import { UsageError } from './command.js';

/**
 * The one argument layer of every `edl` command: a small typed spec, checked before a command
 * loads anything heavy (TensorFlow.js, gRPC, the Kubernetes client). Every failure is a
 * {@link UsageError} of one line in the form "Expected X for --flag but received 'Z'", which the
 * dispatcher prints before the usage, exiting 2.
 */

/** How one option is read. Value options take `--name value` or `--name=value`; the last wins. */
export type OptionSpec =
  | { readonly type: 'boolean' }
  | { readonly type: 'string'; readonly multiple?: boolean }
  | { readonly type: 'integer'; readonly min?: number; readonly max?: number }
  | { readonly type: 'number'; readonly min?: number; readonly max?: number; readonly positive?: boolean }
  | { readonly type: 'choice'; readonly choices: readonly string[] }
  | { readonly type: 'json-object' }
  | { readonly type: 'json-string-array' };

/** The options of one command, by long name without the dashes. */
export type OptionSpecs = Readonly<Record<string, OptionSpec>>;

/** A JSON object given on the command line. */
export type JsonObjectValue = { [key: string]: unknown };

type ValueOf<S extends OptionSpec> = S extends { type: 'boolean' }
  ? boolean
  : S extends { type: 'string'; multiple: true }
    ? string[]
    : S extends { type: 'string' }
      ? string
      : S extends { type: 'integer' | 'number' }
        ? number
        : S extends { type: 'choice'; choices: readonly (infer C)[] }
          ? C
          : S extends { type: 'json-object' }
            ? JsonObjectValue
            : string[];

/** The checked values; an option left out is absent. */
export type OptionValues<S extends OptionSpecs> = { -readonly [K in keyof S]?: ValueOf<S[K]> };

/** A parsed command line. */
export interface CommandLine<S extends OptionSpecs> {
  readonly values: OptionValues<S>;
  readonly positionals: string[];
  /** Each given option's text as typed, for commands that pass options on (edl k8s). */
  readonly raw: ReadonlyMap<string, readonly string[]>;
}

/** Positional arguments: their names, in order; a name ending in `?` is optional. */
export type PositionalNames = readonly string[];

/**
 * Parses `argv` against `specs`: unknown options, a value option without a value, a wrong number
 * of positional arguments and every malformed value become a one-line UsageError. `--` ends the
 * options. A value that starts with one dash is taken as a value (`--num-workers -1` is a range
 * error, not a puzzle); one that starts with two dashes is the next option.
 */
export function parseCommandLine<const S extends OptionSpecs>(
  argv: readonly string[],
  specs: S,
  positionalNames: PositionalNames = [],
): CommandLine<S> {
  const raw = new Map<string, string[]>();
  const positionals: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] as string;
    if (arg === '--') {
      positionals.push(...argv.slice(i + 1));
      break;
    }
    if (arg.startsWith('--')) {
      const eq = arg.indexOf('=');
      const name = eq < 0 ? arg.slice(2) : arg.slice(2, eq);
      const spec = Object.hasOwn(specs, name) ? specs[name] : undefined;
      if (spec === undefined) throw new UsageError(`Unknown option '--${name}'`);
      let value: string;
      if (spec.type === 'boolean') {
        if (eq >= 0)
          throw new UsageError(`option --${name} takes no value but received '${shown(arg.slice(eq + 1))}'`);
        value = 'true';
      } else if (eq >= 0) {
        value = arg.slice(eq + 1);
      } else {
        const next = argv[i + 1];
        if (next === undefined || next.startsWith('--'))
          throw new UsageError(`option --${name} needs a value`);
        value = next;
        i++;
      }
      raw.set(name, [...(raw.get(name) ?? []), value]);
      continue;
    }
    if (arg.length > 1 && arg.startsWith('-') && !/^-\d/.test(arg)) {
      throw new UsageError(`Unknown option '${shown(arg)}'`);
    }
    positionals.push(arg);
  }
  const required = positionalNames.filter((n) => !n.endsWith('?')).length;
  if (positionals.length < required) throw new UsageError(`missing ${positionalNames[positionals.length]}`);
  if (positionals.length > positionalNames.length) {
    throw new UsageError(`unexpected argument '${shown(positionals[positionalNames.length] as string)}'`);
  }
  const values: Record<string, unknown> = {};
  for (const [name, texts] of raw) {
    const spec = specs[name] as OptionSpec;
    values[name] =
      spec.type === 'string' && spec.multiple === true
        ? [...texts]
        : checkValue(spec, texts[texts.length - 1] as string, `--${name}`);
  }
  return { values: values as OptionValues<S>, positionals, raw };
}

/** Checks one option's text against its spec and converts it. */
export function checkValue(spec: OptionSpec, text: string, flag: string): unknown {
  switch (spec.type) {
    case 'boolean':
      return true;
    case 'string':
      return text;
    case 'integer':
      return integerValue(text, flag, spec.min ?? 0, spec.max);
    case 'number':
      return numberValue(text, flag, spec);
    case 'choice':
      return choiceValue(text, flag, spec.choices);
    case 'json-object':
      return jsonObjectValue(text, flag);
    case 'json-string-array':
      return jsonStringArrayValue(text, flag);
  }
}

/** An integer in [min, max] (max: Number.MAX_SAFE_INTEGER when absent), written in decimal digits. */
export function integerValue(text: string, flag: string, min = 0, max?: number): number {
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) {
    const what =
      max !== undefined
        ? `an integer in [${min}, ${max}]`
        : min === 0
          ? 'a non-negative integer'
          : `an integer >= ${min}`;
    throw new UsageError(`Expected ${what} for ${flag} but received '${shown(text)}'`);
  }
  return n;
}

/** A finite number in [min, max], greater than 0 with `positive`. */
export function numberValue(
  text: string,
  flag: string,
  limits: { readonly min?: number; readonly max?: number; readonly positive?: boolean } = {},
): number {
  const n = text.trim() === '' ? Number.NaN : Number(text);
  const { min, max, positive } = limits;
  if (
    !Number.isFinite(n) ||
    (min !== undefined && n < min) ||
    (max !== undefined && n > max) ||
    (positive === true && n <= 0)
  ) {
    const what =
      positive === true
        ? 'a positive number'
        : min !== undefined && max !== undefined
          ? `a number in [${min}, ${max}]`
          : min !== undefined
            ? `a number >= ${min}`
            : 'a number';
    throw new UsageError(`Expected ${what} for ${flag} but received '${shown(text)}'`);
  }
  return n;
}

/** One of `choices`. */
export function choiceValue<T extends string>(text: string, flag: string, choices: readonly T[]): T {
  if ((choices as readonly string[]).includes(text)) return text as T;
  throw new UsageError(`Expected one of ${choices.join(', ')} for ${flag} but received '${shown(text)}'`);
}

/** A JSON object (not an array, not null). */
export function jsonObjectValue(text: string, flag: string): JsonObjectValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new UsageError(
      `Expected a JSON object for ${flag} but received '${shown(text)}' (${shown((error as Error).message)})`,
    );
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new UsageError(`Expected a JSON object for ${flag} but received '${shown(text)}'`);
  }
  return parsed as JsonObjectValue;
}

/** A non-empty JSON array of strings. */
export function jsonStringArrayValue(text: string, flag: string): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length === 0 || !parsed.every((p) => typeof p === 'string')) {
    throw new UsageError(`Expected a JSON array of strings for ${flag} but received '${shown(text)}'`);
  }
  return parsed as string[];
}

/** A value as it appears in a one-line message: control characters escaped, long ones cut. */
function shown(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: escaping them is the point
  const oneLine = text.replace(/[\u0000-\u001f\u007f]/g, (c) => JSON.stringify(c).slice(1, -1));
  return oneLine.length > 200 ? `${oneLine.slice(0, 200)}...` : oneLine;
}
