import Module, { createRequire, register } from 'node:module';
import { fileURLToPath } from 'node:url';

/**
 * The packages a model definition shares with the worker: a bare import of one of them from a
 * model file resolves to the worker's own copy, wherever the file lives.
 */
export const SHARED_PACKAGES: readonly string[] = [
  '@edl/worker',
  '@edl/data',
  '@edl/proto',
  '@edl/recordio',
  '@tensorflow/tfjs-core',
  '@tensorflow/tfjs-layers',
  '@tensorflow/tfjs-backend-cpu',
  '@tensorflow/tfjs-backend-wasm',
  '@tensorflow/tfjs-backend-webgpu',
];

/** `@tensorflow/tfjs` (the union package) resolves to this module: the worker's core + layers. */
const TFJS_UNION = new URL('../hooks/tfjs.mjs', import.meta.url).href;
const TFJS_UNION_CJS = fileURLToPath(new URL('../hooks/tfjs.cjs', import.meta.url));
const HOOKS = new URL('../hooks/shared-packages.mjs', import.meta.url).href;

let installed = false;

/** What hooks/shared-packages.mjs offers `registerHooks`. */
interface SyncHooksModule {
  syncResolver(data: { anchor: string; packages: string[]; aliases: Record<string, string> }): unknown;
}

function packageName(request: string): string | undefined {
  if (request.startsWith('.') || request.startsWith('/') || /^[a-z][a-z0-9+.-]*:/i.test(request))
    return undefined;
  const parts = request.split('/');
  return request.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0];
}

interface ResolvableModule {
  _resolveFilename(request: string, parent: unknown, isMain: boolean, options?: unknown): string;
}

/**
 * Makes the packages of {@link SHARED_PACKAGES} resolve to the worker's copies from any model
 * file: a node:module resolve hook for `import` (which also loads a `.ts`/`.js` model file written
 * with `import`/`export` as an ES module when no package.json says `"type": "module"`), and the
 * same redirect for `require` in CommonJS model files, which Node 20 resolves without the hooks.
 * Idempotent; called before the first model definition loads.
 */
export function shareWorkerPackages(): void {
  if (installed) return;
  installed = true;
  const anchor = import.meta.url;
  const data = { anchor, packages: [...SHARED_PACKAGES], aliases: { '@tensorflow/tfjs': TFJS_UNION } };
  const { registerHooks } = Module as unknown as { registerHooks?: (hooks: { resolve: unknown }) => unknown };
  if (typeof registerHooks === 'function') {
    // Node >= 22.15 (which also requires ES modules): the same hooks, in this thread.
    const hooks = createRequire(import.meta.url)(fileURLToPath(HOOKS)) as SyncHooksModule;
    registerHooks({ resolve: hooks.syncResolver(data) });
  } else {
    register(HOOKS, import.meta.url, { data });
  }
  const anchorRequire = createRequire(anchor);
  const resolvable = Module as unknown as ResolvableModule;
  const original = resolvable._resolveFilename;
  resolvable._resolveFilename = function resolveShared(request, parent, isMain, options) {
    const name = packageName(request);
    if (name !== undefined && SHARED_PACKAGES.includes(name)) {
      try {
        return anchorRequire.resolve(request);
      } catch {
        // Not resolvable from the worker (e.g. an ESM-only subpath): Node's own resolution decides.
      }
    }
    if (request === '@tensorflow/tfjs') return TFJS_UNION_CJS;
    return original.call(this, request, parent, isMain, options);
  };
}
