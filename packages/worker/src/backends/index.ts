export { BACKEND_ORDER, type BackendName, isBackendName } from './backend-name.js';
export { registerCpuFallbackKernels } from './cpu-fallback-kernels.js';
export { registerLinearSegmentSum } from './linear-segment-sum.js';
export {
  type BackendAttempt,
  type BackendSelection,
  type SelectBackendOptions,
  selectBackend,
} from './select-backend.js';
