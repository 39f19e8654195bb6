import { existsSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeValue, OPTIMIZER_TYPES } from '@edl/common';
import { assertSingleTfjs } from './duplicate-tfjs.js';
import { WorkerError } from './errors.js';
import type { ModelDefinition } from './model-definition.js';
import { shareWorkerPackages } from './package-sharing.js';

const OPTIMIZERS: readonly string[] = OPTIMIZER_TYPES;
const BUILTIN_METRICS = ['accuracy', 'auc', 'mse'];
const TYPESCRIPT = /\.(c|m)?tsx?$/;

/**
 * Loads and checks a model definition module. TypeScript files are loaded through tsx's scoped
 * loader (Node 20 cannot strip types itself); JavaScript files are imported directly. Either kind
 * may export the definition's members at the top level or as a default export object.
 *
 * Before the first load it installs the resolution of shared packages (see `shareWorkerPackages`):
 * the model file's imports of @edl/worker and the TensorFlow.js packages get the worker's copies,
 * wherever the file is. A second copy of TensorFlow.js that gets in anyway fails with
 * `TFJS_DUPLICATE`, naming both directories.
 */
export async function loadModelDefinition<TRecord = Uint8Array>(
  file: string,
): Promise<ModelDefinition<TRecord>> {
  if (typeof file !== 'string' || file.length === 0) {
    throw new TypeError(`Expected a file path for modelDef but received ${describeValue(file)}`);
  }
  const absolute = path.resolve(file);
  if (!existsSync(absolute)) {
    throw new WorkerError('MODEL_DEF_LOAD_FAILED', `Model definition ${absolute} does not exist`);
  }
  shareWorkerPackages();
  let loaded: Record<string, unknown>;
  try {
    if (TYPESCRIPT.test(absolute)) {
      const { tsImport } = await importTsx(absolute);
      loaded = (await tsImport(pathToFileURL(absolute).href, import.meta.url)) as Record<string, unknown>;
    } else {
      loaded = (await import(pathToFileURL(absolute).href)) as Record<string, unknown>;
    }
  } catch (error) {
    if (error instanceof WorkerError) throw error;
    // A second tfjs often shows as an odd load error ("kernel ... is not a function"): name it.
    assertSingleTfjs(absolute);
    throw new WorkerError(
      'MODEL_DEF_LOAD_FAILED',
      `Model definition ${absolute} failed to load: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
  assertSingleTfjs(absolute);
  return checkModelDefinition<TRecord>(pickExports(loaded), absolute);
}

/** tsx's range, an optional peer dependency of @edl/worker: only TypeScript model definitions need it. */
export const TSX_RANGE = '^4.23.15';

/** tsx's loader API, or MODEL_DEF_LOAD_FAILED saying how to add tsx when it is not installed. */
async function importTsx(file: string): Promise<typeof import('tsx/esm/api')> {
  try {
    return await import('tsx/esm/api');
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    if (code !== 'ERR_MODULE_NOT_FOUND' || !message.includes(`'tsx'`)) throw error;
    throw new WorkerError(
      'MODEL_DEF_LOAD_FAILED',
      `Model definition ${file} is TypeScript, which needs tsx (an optional dependency of @edl/worker): ` +
        `npm install tsx@${TSX_RANGE}, or write the model definition in JavaScript`,
      { cause: error },
    );
  }
}

/** Top-level exports win; a default export object (or a module namespace nested by tsx) fills the rest. */
function pickExports(loaded: Record<string, unknown>): Record<string, unknown> {
  const merged: Record<string, unknown> = {};
  let current: Record<string, unknown> | undefined = loaded;
  // ESM namespace -> default export; a CommonJS-compiled .ts nests one level more (default.default).
  for (let depth = 0; depth < 3 && current !== undefined; depth++) {
    for (const [key, value] of Object.entries(current)) {
      if (key !== 'default' && key !== '__esModule' && !(key in merged)) merged[key] = value;
    }
    const inner: unknown = current.default;
    current = inner !== null && typeof inner === 'object' ? (inner as Record<string, unknown>) : undefined;
  }
  return merged;
}

/**
 * Checks that `value` has every member of a {@link ModelDefinition}; throws `MODEL_DEF_INVALID`
 * naming the file and the member otherwise.
 */
export function checkModelDefinition<TRecord = Uint8Array>(
  value: Record<string, unknown>,
  source = 'model definition',
): ModelDefinition<TRecord> {
  const fail = (member: string, expected: string): never => {
    throw new WorkerError(
      'MODEL_DEF_INVALID',
      `Expected ${expected} for ${member} in ${source} but received ${describeValue(value[member])}`,
    );
  };
  if (typeof value.model !== 'function') fail('model', 'a function returning a tf.LayersModel');
  if (typeof value.loss !== 'function') fail('loss', 'a function (labels, outputs) => tf.Scalar');
  if (typeof value.datasetFn !== 'function')
    fail('datasetFn', 'a function (records, mode, metadata) => AsyncIterable');
  const optimizer = value.optimizer as { name?: unknown; params?: unknown } | undefined;
  if (
    optimizer === null ||
    typeof optimizer !== 'object' ||
    !OPTIMIZERS.includes(optimizer.name as string) ||
    (optimizer.params !== undefined && (optimizer.params === null || typeof optimizer.params !== 'object'))
  ) {
    fail('optimizer', `{ name: ${OPTIMIZERS.join(' | ')}, params }`);
  }
  const metrics = value.evalMetrics ?? {};
  if (metrics === null || typeof metrics !== 'object')
    fail('evalMetrics', 'an object of metric name to metric');
  for (const [name, metric] of Object.entries(metrics as Record<string, unknown>)) {
    if (typeof metric !== 'function' && !BUILTIN_METRICS.includes(metric as string)) {
      fail('evalMetrics', `${BUILTIN_METRICS.join(', ')} or a function for metric '${name}'`);
    }
  }
  const processor = value.predictionOutputsProcessor as { process?: unknown } | undefined;
  if (processor !== undefined && (processor === null || typeof processor.process !== 'function')) {
    fail('predictionOutputsProcessor', 'an object with a process(outputs, context) method');
  }
  if (value.reuseRecordMemory !== undefined && typeof value.reuseRecordMemory !== 'boolean') {
    fail('reuseRecordMemory', 'a boolean');
  }
  if (value.customDataReader !== undefined && typeof value.customDataReader !== 'function') {
    fail('customDataReader', 'a function (params) => DataReader');
  }
  const spec = optimizer as { name: ModelDefinition['optimizer']['name']; params?: Record<string, number> };
  return {
    ...(value as unknown as ModelDefinition<TRecord>),
    optimizer: { name: spec.name, params: spec.params ?? {} },
    evalMetrics: metrics as ModelDefinition<TRecord>['evalMetrics'],
  };
}
