import { createRequire } from 'node:module';
import path from 'node:path';
import { tf, tfBackendWasm } from '../../hooks/tfjs-commonjs.mjs';
import { registerConv2DBackpropFilter } from './conv2d-backprop-filter.js';
import { registerCpuFallbackKernels } from './cpu-fallback-kernels.js';
import { registerLinearSegmentSum } from './linear-segment-sum.js';

/** What was found when the WebAssembly backend was tried. */
export interface WasmProbe {
  readonly ok: boolean;
  readonly detail: string;
  /** Kernels delegated to the CPU backend because tfjs-backend-wasm lacks them. */
  readonly delegatedKernels: readonly string[];
}

let prepared: { delegated: string[]; dir: string } | undefined;

/**
 * Switches TensorFlow.js to the `wasm` backend. The `.wasm` binaries are located in the installed
 * `@tensorflow/tfjs-backend-wasm` package (Node has no page URL to fetch them from), and the kernels
 * wasm lacks, gradients of convolution and pooling among them, are delegated to the CPU backend.
 */
export async function activateWasm(): Promise<WasmProbe> {
  if (prepared === undefined) {
    const require = createRequire(import.meta.url);
    const dir = path.join(
      path.dirname(require.resolve('@tensorflow/tfjs-backend-wasm/package.json')),
      'dist',
    );
    tfBackendWasm.setWasmPaths(`${dir}${path.sep}`);
    // Composed from wasm's own kernels: fast, unlike the CPU backend's version.
    registerConv2DBackpropFilter('wasm');
    prepared = { delegated: registerCpuFallbackKernels('wasm'), dir };
    // After the fallbacks, which would otherwise borrow the CPU's per-segment kernel.
    registerLinearSegmentSum('wasm');
  }
  let ok = false;
  let failure = '';
  try {
    ok = await tf.setBackend('wasm');
  } catch (error) {
    failure = (error as Error).message;
  }
  const delegatedKernels = prepared.delegated;
  if (!ok) return { ok, detail: `wasm did not start${failure ? `: ${failure}` : ''}`, delegatedKernels };
  return {
    ok,
    detail: `binaries from ${prepared.dir}, ${delegatedKernels.length} kernels delegated to cpu`,
    delegatedKernels,
  };
}
