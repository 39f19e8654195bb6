import { describeValue } from '@edl/common';
// Loads tfjs-backend-cpu and tfjs-layers too: tfjs-core's Node bundle registers no gradients,
// tfjs-layers' bundle registers them all.
import { tf } from '../../hooks/tfjs-commonjs.mjs';
import { WorkerError } from '../errors.js';
import { silentLogger, type WorkerLogger } from '../logger.js';
import { BACKEND_ORDER, type BackendName, isBackendName } from './backend-name.js';
import { registerLinearSegmentSum } from './linear-segment-sum.js';
import { activateTensorflow } from './tensorflow.js';
import { activateWasm } from './wasm.js';
import { activateWebGpu } from './webgpu.js';

/** Whether the cpu backend got its faster kernels (once per process). */
let cpuKernelsRegistered = false;

/** Options of {@link selectBackend}. */
export interface SelectBackendOptions {
  /** A backend to use instead of trying them in order; `'auto'` (the default) tries them in order. */
  readonly backend?: BackendName | 'auto';
  /**
   * Whether the automatic order may pick a software WebGPU adapter (lavapipe, SwiftShader). Default
   * false: on the CPU, Dawn's software Vulkan is slower than wasm. Naming `webgpu` always allows it.
   */
  readonly allowSoftwareWebGpu?: boolean;
  /** Receives one `backend.selected` event, plus `backend.skipped` for each backend that failed. */
  readonly logger?: WorkerLogger;
}

/** One backend that was tried. */
export interface BackendAttempt {
  readonly name: BackendName;
  readonly ok: boolean;
  readonly detail: string;
}

/** The backend TensorFlow.js now runs on, and what was tried before it. */
export interface BackendSelection {
  readonly name: BackendName;
  readonly detail: string;
  readonly attempts: readonly BackendAttempt[];
}

async function activate(name: BackendName, allowSoftware: boolean): Promise<{ ok: boolean; detail: string }> {
  switch (name) {
    case 'webgpu':
      return activateWebGpu({ allowSoftware });
    case 'tensorflow':
      return activateTensorflow();
    case 'wasm':
      return activateWasm();
    case 'cpu': {
      if (!cpuKernelsRegistered) {
        registerLinearSegmentSum('cpu');
        cpuKernelsRegistered = true;
      }
      const ok = await tf.setBackend('cpu');
      return { ok, detail: ok ? 'JavaScript kernels' : "tf.setBackend('cpu') failed" };
    }
  }
}

/**
 * Picks and activates the TensorFlow.js backend: the one named by `options.backend`, or the first
 * that starts of webgpu (when Dawn finds a hardware adapter, or any adapter with
 * `allowSoftwareWebGpu`), tensorflow (when tfjs-node is installed), wasm and cpu. The choice is logged. A named backend that cannot start throws `BACKEND_UNAVAILABLE`.
 */
export async function selectBackend(options: SelectBackendOptions = {}): Promise<BackendSelection> {
  const requested = options.backend ?? 'auto';
  if (requested !== 'auto' && !isBackendName(requested)) {
    throw new TypeError(
      `Expected one of auto, ${BACKEND_ORDER.join(', ')} for backend but received ${describeValue(requested)}`,
    );
  }
  const logger = options.logger ?? silentLogger;
  const candidates: readonly BackendName[] = requested === 'auto' ? BACKEND_ORDER : [requested];
  const attempts: BackendAttempt[] = [];
  for (const name of candidates) {
    let result: { ok: boolean; detail: string };
    try {
      result = await activate(name, requested === 'webgpu' || options.allowSoftwareWebGpu === true);
    } catch (error) {
      result = { ok: false, detail: (error as Error).message };
    }
    attempts.push({ name, ok: result.ok, detail: result.detail });
    if (result.ok) {
      await tf.ready();
      logger.info('backend.selected', { backend: name, detail: result.detail });
      return { name, detail: result.detail, attempts };
    }
    logger.warn('backend.skipped', { backend: name, reason: result.detail });
  }
  const tried = attempts.map((a) => `${a.name}: ${a.detail}`).join('; ');
  throw new WorkerError('BACKEND_UNAVAILABLE', `No TensorFlow.js backend could start (${tried})`);
}
