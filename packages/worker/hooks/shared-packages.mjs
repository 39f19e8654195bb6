// @ts-check
/**
 * Module resolution hooks (node:module `register`, or `registerHooks` where Node has it) that
 * @edl/worker installs before it loads a model definition. Plain JavaScript outside `src`: with
 * `register`, Node runs hooks on a thread of its own, which cannot load TypeScript, and this file is
 * found the same way from the sources and from `dist`.
 *
 * 1. Bare imports of the packages that the worker computes with (@edl/worker, @edl/data, the
 *    TensorFlow.js packages, ...) resolve as if imported by the worker itself, so a model file
 *    anywhere (beside its own node_modules, or with none) shares the worker's one copy of each:
 *    two copies of tfjs-core are two engines whose tensors and kernels do not mix.
 * 2. `@tensorflow/tfjs`, the union package, resolves to the worker's tfjs-core + tfjs-layers.
 * 3. A model file (.ts or .js, outside node_modules) written with `import` / `export` loads as an
 *    ES module even when no package.json says `"type": "module"`; loaded as CommonJS, its imports
 *    would turn into `require` calls that Node 20 resolves without these hooks.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** @type {{ anchor: string, packages: string[], aliases: Record<string, string> }} */
let settings = { anchor: '', packages: [], aliases: {} };

/** @param {{ anchor: string, packages: string[], aliases: Record<string, string> }} data */
export function initialize(data) {
  settings = data;
}

/** The package name of a bare specifier ('@scope/name/sub' -> '@scope/name'), or undefined. */
function packageName(/** @type {string} */ specifier) {
  if (specifier.startsWith('.') || specifier.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(specifier)) {
    return undefined;
  }
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

const ESM_SYNTAX =
  /^[ \t]*(import[ \t]*[\w{*'"]|export[ \t]+(\{|\*|default\b|const\b|let\b|var\b|function\b|async\b|class\b|type\b|interface\b|enum\b|abstract\b|declare\b))/m;
const FORCEABLE = /\.(ts|tsx|js|jsx)$/;

/** True when `url` is a user's .ts/.js file that uses ESM syntax but would load as CommonJS. */
function wantsModule(/** @type {string} */ url, /** @type {string | null | undefined} */ format) {
  if (format !== 'commonjs' && format !== undefined && format !== null) return false;
  if (!url.startsWith('file:')) return false;
  const file = fileURLToPath(url.split('?')[0] ?? url);
  if (!FORCEABLE.test(file) || file.includes('/node_modules/') || file.includes('\\node_modules\\'))
    return false;
  try {
    return ESM_SYNTAX.test(readFileSync(file, 'utf8'));
  } catch {
    return false;
  }
}

/**
 * @typedef {{ url: string, format?: string | null, shortCircuit?: boolean }} Resolved
 * @typedef {{ parentURL?: string, conditions?: string[], importAttributes?: object }} ResolveContext
 */

/**
 * @template R
 * @param {{ anchor: string, packages: string[], aliases: Record<string, string> }} data
 * @param {string} specifier
 * @param {ResolveContext} context
 * @param {(specifier: string, context?: object) => R} nextResolve
 * @param {(resolved: R) => R} adjust what becomes of Node's own answer (see `asModuleWhenWanted`)
 * @returns {R | Resolved}
 */
function resolveWith(data, specifier, context, nextResolve, adjust) {
  const alias = data.aliases[specifier];
  if (alias !== undefined) return { url: alias, shortCircuit: true };
  const name = packageName(specifier);
  if (name !== undefined && data.packages.includes(name)) {
    return nextResolve(specifier, { ...context, parentURL: data.anchor });
  }
  return adjust(nextResolve(specifier, context));
}

/**
 * @param {string} specifier
 * @param {ResolveContext} context
 * @param {(specifier: string, context?: object) => Promise<Resolved>} nextResolve
 */
export async function resolve(specifier, context, nextResolve) {
  return resolveWith(settings, specifier, context, nextResolve, async (next) =>
    asModuleWhenWanted(await next),
  );
}

/**
 * The same resolution for `module.registerHooks` (Node >= 22.15), which runs hooks synchronously
 * on the thread that imports: no hooks thread to start (about 0.1 s of a worker's start-up, and a
 * round trip to that thread for every import after it).
 * @param {{ anchor: string, packages: string[], aliases: Record<string, string> }} data
 * @returns {(specifier: string, context: ResolveContext, nextResolve: (specifier: string, context?: object) => Resolved) => Resolved}
 */
export function syncResolver(data) {
  return (specifier, context, nextResolve) =>
    resolveWith(data, specifier, context, nextResolve, asModuleWhenWanted);
}

/** @param {Resolved} resolved */
function asModuleWhenWanted(resolved) {
  return wantsModule(resolved.url, resolved.format) ? { ...resolved, format: 'module' } : resolved;
}
