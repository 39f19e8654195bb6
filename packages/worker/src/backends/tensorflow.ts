import { tf } from '../../hooks/tfjs-commonjs.mjs';
import { shareWorkerPackages } from '../package-sharing.js';

/** What was found when the native TensorFlow backend was tried. */
export interface TensorflowProbe {
  readonly ok: boolean;
  readonly detail: string;
}

/** Optional packages that register the `tensorflow` backend; never dependencies of @edl/worker. */
const NATIVE_PACKAGES = ['@tensorflow/tfjs-node-gpu', '@tensorflow/tfjs-node'] as const;

/**
 * Switches to libtensorflow through `@tensorflow/tfjs-node-gpu` or `@tensorflow/tfjs-node` when
 * one of them is installed. They are loaded by name at run time because their install step
 * downloads libtensorflow from outside the npm registry, so they cannot be hard dependencies.
 */
export async function activateTensorflow(): Promise<TensorflowProbe> {
  const reasons: string[] = [];
  // They import @tensorflow/tfjs-core: the worker's copy, which the published package bundles.
  shareWorkerPackages();
  for (const name of NATIVE_PACKAGES) {
    try {
      // A variable specifier keeps bundlers and tsc from resolving a package that is usually absent.
      const specifier: string = name;
      await import(specifier);
    } catch (error) {
      const code = (error as { code?: string }).code;
      reasons.push(
        code === 'ERR_MODULE_NOT_FOUND' ? `${name} not installed` : `${name}: ${(error as Error).message}`,
      );
      continue;
    }
    if (tf.findBackendFactory('tensorflow') === null) {
      reasons.push(`${name} loaded but registered its backend in another copy of @tensorflow/tfjs-core`);
      continue;
    }
    if (await tf.setBackend('tensorflow')) return { ok: true, detail: `libtensorflow via ${name}` };
    reasons.push(`${name} loaded but tf.setBackend('tensorflow') failed`);
  }
  return { ok: false, detail: reasons.join('; ') };
}
