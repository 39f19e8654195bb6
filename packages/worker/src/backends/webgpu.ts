import { tf } from '../../hooks/tfjs-commonjs.mjs';
import { shareWorkerPackages } from '../package-sharing.js';

/** What was found when the WebGPU backend was tried. */
export interface WebGpuProbe {
  readonly ok: boolean;
  /** Adapter vendor / architecture / description, or why there is none. */
  readonly detail: string;
  /** True for a software (fallback) adapter such as Mesa's lavapipe / llvmpipe. */
  readonly software?: boolean;
}

interface AdapterInfoLike {
  readonly vendor?: string;
  readonly architecture?: string;
  readonly device?: string;
  readonly description?: string;
  readonly isFallbackAdapter?: boolean;
}

let installed: Promise<WebGpuProbe> | undefined;

/**
 * The WebGPU backend's packages: optional peer dependencies of @edl/worker (Dawn's binaries for every
 * platform are over 100 MB), installed by users who want the webgpu backend.
 */
export const WEBGPU_PACKAGES = { webgpu: '^0.6.2', '@tensorflow/tfjs-backend-webgpu': '4.22.0' } as const;

/** What to say when importing `name` failed: how to install it when it is absent. */
function importFailure(name: keyof typeof WEBGPU_PACKAGES, error: unknown): string {
  const message = (error as Error).message;
  if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND' && message.includes(`'${name}'`)) {
    const install = Object.entries(WEBGPU_PACKAGES)
      .map(([pkg, range]) => `${pkg}@${range}`)
      .join(' ');
    return `${name} is not installed (an optional dependency of @edl/worker): npm install ${install}`;
  }
  return `the ${name} package did not load: ${message}`;
}

/**
 * Makes WebGPU available to TensorFlow.js in Node through Dawn's bindings (the `webgpu` package) and
 * switches to the `webgpu` backend. `navigator.gpu` and the WebGPU globals (`GPUBufferUsage`, ...)
 * must exist before `@tensorflow/tfjs-backend-webgpu` is imported, so that import is dynamic.
 * Resolves `{ ok: false }` instead of throwing when there is no adapter: `tf.setBackend` returns
 * false in that case rather than failing.
 */
export function activateWebGpu(options: { allowSoftware?: boolean } = {}): Promise<WebGpuProbe> {
  installed ??= install();
  return installed.then(async (probe) => {
    if (!probe.ok) return probe;
    if (probe.software && options.allowSoftware === false) {
      return {
        ok: false,
        software: true,
        detail: `software adapter (${probe.detail}): slower than wasm, name webgpu to use it`,
      };
    }
    const switched = await tf.setBackend('webgpu');
    return switched ? probe : { ok: false, detail: `tf.setBackend('webgpu') failed (${probe.detail})` };
  });
}

async function install(): Promise<WebGpuProbe> {
  let dawn: typeof import('webgpu');
  try {
    dawn = await import('webgpu');
  } catch (error) {
    return { ok: false, detail: importFailure('webgpu', error) };
  }
  const globals = dawn.globals as Record<string, unknown>;
  for (const [key, value] of Object.entries(globals)) {
    if (!(key in globalThis))
      Object.defineProperty(globalThis, key, { value, configurable: true, writable: true });
  }
  // Dawn options: none. An empty list lets Dawn pick its default adapter (Vulkan on Linux).
  const gpu = dawn.create([]) as GPU;
  const existing = (globalThis as { navigator?: object }).navigator;
  if (existing === undefined) {
    Object.defineProperty(globalThis, 'navigator', { value: { gpu }, configurable: true, writable: true });
  } else if (!('gpu' in existing) || (existing as { gpu?: unknown }).gpu === undefined) {
    Object.defineProperty(existing, 'gpu', { value: gpu, configurable: true, writable: true });
  }
  let adapter: GPUAdapter | null;
  try {
    adapter = await gpu.requestAdapter();
  } catch (error) {
    return { ok: false, detail: `requestAdapter failed: ${(error as Error).message}` };
  }
  if (adapter === null) return { ok: false, detail: 'no WebGPU adapter found' };
  const info = (adapter as unknown as { info?: AdapterInfoLike }).info ?? {};
  const detail = [info.vendor, info.architecture, info.device, info.description]
    .filter((part) => typeof part === 'string' && part.length > 0)
    .join(' ');
  // The published @edl/worker carries its own tfjs-core; the backend, installed beside it, must
  // register its kernels there, not in a tfjs-core of its own.
  shareWorkerPackages();
  try {
    await import('@tensorflow/tfjs-backend-webgpu');
  } catch (error) {
    return { ok: false, detail: importFailure('@tensorflow/tfjs-backend-webgpu', error) };
  }
  const software = info.isFallbackAdapter === true || info.architecture === 'software';
  return { ok: true, software, detail: detail.length > 0 ? detail : 'unnamed adapter' };
}
