import { tf, tfBackendCpu } from '../../hooks/tfjs-commonjs.mjs';

/** A backend that stores tensor data and can hand it back synchronously (wasm, cpu). */
interface SyncBackend {
  write(values: tf.backend_util.BackendValues | null, shape: number[], dtype: tf.DataType): tf.DataId;
  readSync(dataId: tf.DataId): tf.backend_util.BackendValues;
  disposeData(dataId: tf.DataId, force?: boolean): boolean;
}

let cpu: tfBackendCpu.MathBackendCPU | undefined;

/**
 * Registers, for `backendName`, every kernel that the CPU backend has and `backendName` lacks,
 * by running the CPU kernel on copies of the inputs and copying the outputs back.
 *
 * Why: tfjs-backend-wasm has no gradient kernels for convolution and pooling
 * (`Conv2DBackpropFilter`, `MaxPoolGrad`, `AvgPoolGrad`, ...), so a CNN cannot train on it.
 * Delegating keeps the forward pass in WebAssembly and costs two memory copies per delegated call.
 * Returns the names of the kernels it registered (empty when called again).
 */
export function registerCpuFallbackKernels(backendName: string): string[] {
  if (cpu === undefined) {
    cpu = new tfBackendCpu.MathBackendCPU();
    // This private instance is an implementation detail: skip its "install tfjs-node" console hint.
    (cpu as unknown as { firstUse: boolean }).firstUse = false;
  }
  const have = new Set(tf.getKernelsForBackend(backendName).map((kernel) => kernel.kernelName));
  const added: string[] = [];
  for (const kernel of tf.getKernelsForBackend('cpu')) {
    if (have.has(kernel.kernelName)) continue;
    tf.registerKernel({
      kernelName: kernel.kernelName,
      backendName,
      kernelFunc: ({ inputs, backend, attrs }) =>
        runOnCpu(kernel, inputs, backend as unknown as SyncBackend, attrs),
    });
    added.push(kernel.kernelName);
  }
  return added;
}

function runOnCpu(
  kernel: tf.KernelConfig,
  inputs: tf.NamedTensorInfoMap,
  owner: SyncBackend,
  attrs: tf.NamedAttrMap | undefined,
): tf.TensorInfo | tf.TensorInfo[] {
  const host = cpu as tfBackendCpu.MathBackendCPU;
  const copies: tf.NamedTensorInfoMap = {};
  const created: tf.DataId[] = [];
  try {
    for (const [name, info] of Object.entries(inputs)) {
      // Optional inputs (a fused op's missing bias) arrive as undefined and stay so.
      if (info === undefined || info === null) continue;
      const dataId = host.write(owner.readSync(info.dataId), info.shape, info.dtype);
      created.push(dataId);
      copies[name] = { dataId, shape: info.shape, dtype: info.dtype };
    }
    const result = kernel.kernelFunc({ inputs: copies, backend: host, attrs });
    const outputs = Array.isArray(result) ? result : [result];
    const moved = outputs.map((out) => {
      const dataId = owner.write(host.readSync(out.dataId), out.shape, out.dtype);
      host.disposeData(out.dataId, true);
      return { dataId, shape: out.shape, dtype: out.dtype };
    });
    return Array.isArray(result) ? moved : (moved[0] as tf.TensorInfo);
  } finally {
    for (const dataId of created) host.disposeData(dataId, true);
  }
}
