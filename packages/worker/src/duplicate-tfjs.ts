import { createRequire } from 'node:module';
import { WorkerError } from './errors.js';

const TFJS_FILE = /^(.*[\\/]node_modules[\\/]@tensorflow[\\/](tfjs(?:-[\w-]+)?))[\\/]/;

/**
 * The TensorFlow.js packages loaded from more than one directory in this process, by package name.
 * Node keeps every CommonJS module it loaded (tfjs's Node bundles are CommonJS, imported or
 * required) in `require.cache`, by real path.
 */
export function loadedTfjsCopies(): Map<string, string[]> {
  const cache = createRequire(import.meta.url).cache;
  const dirs = new Map<string, Set<string>>();
  for (const file of Object.keys(cache)) {
    const match = TFJS_FILE.exec(file);
    if (match === null) continue;
    const [, dir, name] = match as unknown as [string, string, string];
    const seen = dirs.get(name) ?? new Set<string>();
    seen.add(dir);
    dirs.set(name, seen);
  }
  const copies = new Map<string, string[]>();
  for (const [name, seen] of dirs) if (seen.size > 1) copies.set(`@tensorflow/${name}`, [...seen].sort());
  return copies;
}

/**
 * Throws `TFJS_DUPLICATE` when a second copy of a TensorFlow.js package got into the process (a
 * model definition that imports it by a path of its own, or a library beside the model that
 * bundles one): two copies are two engines, and tensors or kernels of one fail in the other with
 * errors such as "wasmFusedMatMul is not a function".
 */
export function assertSingleTfjs(modelFile: string): void {
  const copies = loadedTfjsCopies();
  if (copies.size === 0) return;
  const list = [...copies].map(([name, dirs]) => `${name} from ${dirs.join(' and ')}`).join('; ');
  throw new WorkerError(
    'TFJS_DUPLICATE',
    `Model definition ${modelFile} loaded a second copy of TensorFlow.js (${list}). ` +
      "Import '@tensorflow/tfjs-core', '@tensorflow/tfjs-layers' or { tf, tfl } from '@edl/worker' by " +
      'package name (edl resolves those to its own copy), and do not import tfjs files by path or ' +
      'through a library that bundles its own copy.',
  );
}
