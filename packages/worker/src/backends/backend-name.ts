/** The compute backends the worker knows, in the order `selectBackend` tries them. */
export const BACKEND_ORDER = ['webgpu', 'tensorflow', 'wasm', 'cpu'] as const;

/** A TensorFlow.js backend the worker can run on. */
export type BackendName = (typeof BACKEND_ORDER)[number];

/** True when `value` names a backend the worker knows. */
export function isBackendName(value: unknown): value is BackendName {
  return typeof value === 'string' && (BACKEND_ORDER as readonly string[]).includes(value);
}
