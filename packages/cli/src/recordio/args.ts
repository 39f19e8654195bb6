import { type ParseArgsConfig, parseArgs } from 'node:util';
import { UsageError } from '../command.js';

/** Option specs in node:util parseArgs form. */
export type OptionSpecs = NonNullable<ParseArgsConfig['options']>;

/** Parsed command line of one sub-command. */
export interface ParsedArgs {
  readonly values: Record<string, string | boolean | undefined>;
  readonly positionals: string[];
}

/**
 * Parses `argv` strictly: unknown options, missing values and a wrong number of positional
 * arguments become UsageErrors (one line, then the usage), never stack traces.
 */
export function parseCommandLine(
  argv: string[],
  options: OptionSpecs,
  positionalNames: readonly string[],
): ParsedArgs {
  let parsed: ParsedArgs;
  try {
    const result = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    parsed = { values: result.values as ParsedArgs['values'], positionals: result.positionals };
  } catch (error) {
    throw new UsageError(firstLine(error instanceof Error ? error.message : String(error)));
  }
  if (parsed.positionals.length < positionalNames.length) {
    throw new UsageError(`missing ${positionalNames[parsed.positionals.length]}`);
  }
  if (parsed.positionals.length > positionalNames.length) {
    throw new UsageError(`unexpected argument '${parsed.positionals[positionalNames.length]}'`);
  }
  return parsed;
}

/** A non-negative integer option, or `fallback` when absent. */
export function integerOption(
  value: string | boolean | undefined,
  name: string,
  fallback: number,
  min = 0,
): number {
  if (value === undefined) return fallback;
  const text = String(value);
  const n = /^\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!Number.isSafeInteger(n) || n < min) {
    const what = min === 0 ? 'a non-negative integer' : `an integer >= ${min}`;
    throw new UsageError(`Expected ${what} for ${name} but received '${text}'`);
  }
  return n;
}

/** A choice option, or `fallback` when absent. */
export function choiceOption<T extends string>(
  value: string | boolean | undefined,
  name: string,
  choices: readonly T[],
  fallback: T,
): T {
  if (value === undefined) return fallback;
  if ((choices as readonly string[]).includes(String(value))) return value as T;
  throw new UsageError(`Expected one of ${choices.join(', ')} for ${name} but received '${String(value)}'`);
}

function firstLine(text: string): string {
  const newline = text.indexOf('\n');
  return newline < 0 ? text : text.slice(0, newline);
}
