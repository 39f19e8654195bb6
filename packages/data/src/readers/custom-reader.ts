import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describeValue, expectedMessage } from '@edl/common';
import type { DataReader, JsonObject, RecordRange } from '../protocols.js';
import { DataReaderError } from './errors.js';

/**
 * What a custom reader module exports: a function from the `--data-reader-params` object to a
 * DataReader (or a promise of one).
 */
export type DataReaderFactory = (params: JsonObject) => DataReader<unknown> | Promise<DataReader<unknown>>;

/** Options of {@link loadCustomReader}. */
export interface LoadCustomReaderOptions {
  /** Directory a relative module path is resolved against. Default `process.cwd()`. */
  readonly cwd?: string;
}

/** A parsed `<module>[#export]`: where the module is and which export is the factory. */
export interface CustomReaderSpec {
  /** What `import()` is given: a file URL for paths, the specifier itself for packages. */
  readonly module: string;
  /** The export holding the factory (`default` when the spec names none). */
  readonly exportName: string;
  /** The spec with the module made absolute, so another process (another cwd) loads the same one. */
  readonly canonical: string;
}

/**
 * Parses `<module>[#export]`. A module that is a path (absolute, or starting with `.`, or holding a
 * `/`, or a `file:` URL) is resolved against `cwd`; anything else is a package name, resolved from
 * `cwd` as Node resolves it. The export defaults to `default`.
 */
export function parseReaderSpec(spec: string, cwd: string = process.cwd()): CustomReaderSpec {
  if (typeof spec !== 'string' || spec.trim() === '') {
    throw new TypeError(expectedMessage('a module spec <module>[#export]', '--data-reader', spec));
  }
  const hash = spec.lastIndexOf('#');
  const modulePart = hash < 0 ? spec : spec.slice(0, hash);
  const exportName = hash < 0 ? 'default' : spec.slice(hash + 1);
  if (modulePart === '' || exportName === '') {
    throw new TypeError(expectedMessage('a module spec <module>[#export]', '--data-reader', spec));
  }
  if (modulePart.startsWith('file:')) {
    const path = fileURLToPath(modulePart);
    return { module: pathToFileURL(path).href, exportName, canonical: `${path}#${exportName}` };
  }
  if (isAbsolute(modulePart) || modulePart.startsWith('.') || modulePart.includes('/')) {
    const path = resolve(cwd, modulePart);
    return { module: pathToFileURL(path).href, exportName, canonical: `${path}#${exportName}` };
  }
  // A package: resolved from cwd (a CommonJS-only resolution; ESM-only packages fall back to
  // Node's resolution from this package).
  let module = modulePart;
  try {
    const resolved = createRequire(join(cwd, 'package.json')).resolve(modulePart);
    // Built-in modules (`node:fs`) resolve to themselves, packages to a file.
    if (isAbsolute(resolved)) module = pathToFileURL(resolved).href;
  } catch {
    // import() below reports it if it really is missing.
  }
  return { module, exportName, canonical: `${modulePart}#${exportName}` };
}

/**
 * Parses `--data-reader-params`: a JSON object (never evaluated as code). Absent or empty gives `{}`.
 *
 * @throws TypeError for text that is not JSON or not a JSON object, with the parser's complaint.
 */
export function parseReaderParams(json: string | undefined): JsonObject {
  if (json === undefined || json.trim() === '') return {};
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new TypeError(
      `${expectedMessage('a JSON object', '--data-reader-params', json)}: ${(error as Error).message}`,
    );
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new TypeError(expectedMessage('a JSON object', '--data-reader-params', json));
  }
  return value as JsonObject;
}

/** The members a DataReader lacks (empty: it is one). */
export function missingDataReaderMembers(value: unknown): string[] {
  if (typeof value !== 'object' || value === null)
    return ['createShards()', 'readRecords()', 'describe()', 'metadata'];
  const v = value as Record<string, unknown>;
  const missing: string[] = [];
  for (const method of ['createShards', 'readRecords', 'describe']) {
    if (typeof v[method] !== 'function') missing.push(`${method}()`);
  }
  if (typeof v.metadata !== 'object' || v.metadata === null) missing.push('metadata');
  if (v.close !== undefined && typeof v.close !== 'function')
    missing.push('close() (present but not a function)');
  return missing;
}

/** Whether `value` satisfies the DataReader protocol (checked structurally, as at run time). */
export function isDataReader(value: unknown): value is DataReader<unknown> {
  return missingDataReaderMembers(value).length === 0;
}

/** Imports the module of `spec` and returns its factory export. */
export async function loadReaderFactory(
  spec: string,
  options: LoadCustomReaderOptions = {},
): Promise<DataReaderFactory> {
  const parsed = parseReaderSpec(spec, options.cwd);
  const path = parsed.module.startsWith('file:') ? fileURLToPath(parsed.module) : undefined;
  if (path !== undefined && !existsSync(path)) {
    throw new DataReaderError(
      'READER_MODULE_NOT_FOUND',
      `custom reader module ${describeValue(spec)} not found: no file ${path}`,
    );
  }
  let module: Record<string, unknown>;
  try {
    module = (await import(parsed.module)) as Record<string, unknown>;
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    const missing =
      path === undefined &&
      (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') &&
      String((error as Error).message).includes(`'${parsed.module}'`);
    throw new DataReaderError(
      missing ? 'READER_MODULE_NOT_FOUND' : 'READER_MODULE_FAILED',
      missing
        ? `custom reader module ${describeValue(spec)} not found (not a file path, and no such package)`
        : `custom reader module ${describeValue(spec)} failed to load: ${(error as Error).message}`,
      error,
    );
  }
  if (!(parsed.exportName in module) || module[parsed.exportName] === undefined) {
    const available = Object.keys(module)
      .filter((k) => module[k] !== undefined)
      .sort();
    throw new DataReaderError(
      'READER_EXPORT_NOT_FOUND',
      `custom reader module ${describeValue(spec)} has no export ${JSON.stringify(parsed.exportName)}; ` +
        `it exports ${available.length === 0 ? 'nothing' : available.map((k) => JSON.stringify(k)).join(', ')}`,
    );
  }
  const factory = module[parsed.exportName];
  if (typeof factory !== 'function') {
    throw new DataReaderError(
      'READER_EXPORT_NOT_FUNCTION',
      `export ${JSON.stringify(parsed.exportName)} of custom reader module ${describeValue(spec)} is ` +
        `${describeValue(factory)}, not a reader factory function (params) => DataReader`,
    );
  }
  return factory as DataReaderFactory;
}

/**
 * Loads a user's reader: imports `<module>[#export]` (see {@link parseReaderSpec}), parses
 * `paramsJson` with JSON.parse (never eval), calls the factory with it and checks that the result is
 * a DataReader. The returned reader delegates to the user's one; its `describe()` gives
 * `{ type: '<absolute module>#<export>', params }`, from which `createDataReader` re-creates it in
 * another process.
 *
 * @throws TypeError for a bad spec or bad JSON; DataReaderError `READER_MODULE_NOT_FOUND`,
 * `READER_MODULE_FAILED`, `READER_EXPORT_NOT_FOUND`, `READER_EXPORT_NOT_FUNCTION` or
 * `NOT_A_DATA_READER`. An error thrown by the factory itself is passed on unchanged.
 */
export async function loadCustomReader(
  spec: string,
  paramsJson?: string | JsonObject,
  options: LoadCustomReaderOptions = {},
): Promise<DataReader<unknown>> {
  const params =
    typeof paramsJson === 'object' && paramsJson !== null ? paramsJson : parseReaderParams(paramsJson);
  const factory = await loadReaderFactory(spec, options);
  const reader: unknown = await factory(params);
  const missing = missingDataReaderMembers(reader);
  if (missing.length > 0) {
    throw new DataReaderError(
      'NOT_A_DATA_READER',
      `the factory ${describeValue(spec)} returned ${describeValue(reader)}, which lacks ${missing.join(', ')}; ` +
        'a DataReader has createShards(), readRecords(range), describe() and a metadata object',
    );
  }
  return new CustomDataReader(
    reader as DataReader<unknown>,
    parseReaderSpec(spec, options.cwd).canonical,
    params,
  );
}

/** A user's reader, described by the spec and params that loaded it. */
class CustomDataReader implements DataReader<unknown> {
  readonly #inner: DataReader<unknown>;
  readonly #type: string;
  readonly #params: JsonObject;

  constructor(inner: DataReader<unknown>, type: string, params: JsonObject) {
    this.#inner = inner;
    this.#type = type;
    this.#params = params;
  }

  get metadata() {
    return this.#inner.metadata;
  }

  createShards() {
    return this.#inner.createShards();
  }

  readRecords(range: RecordRange) {
    return this.#inner.readRecords(range);
  }

  describe() {
    return { type: this.#type, params: structuredClone(this.#params) };
  }

  async close(): Promise<void> {
    await this.#inner.close?.();
  }
}
