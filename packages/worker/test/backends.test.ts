import * as tf from '@tensorflow/tfjs-core';
import { describe, expect, it } from 'vitest';
import { selectBackend, WorkerError, type WorkerLogger } from '../src/index.js';

function recordingLogger(): WorkerLogger & { events: Array<{ event: string; fields: object }> } {
  const events: Array<{ event: string; fields: object }> = [];
  return {
    events,
    info: (event, fields = {}) => events.push({ event, fields }),
    warn: (event, fields = {}) => events.push({ event, fields }),
  };
}

/** One step of a 2-layer net with fixed weights: loss and gradients, read asynchronously. */
async function trainingStep(): Promise<{ loss: number; grads: Record<string, Float32Array> }> {
  const w1 = tf.variable(
    tf.tensor2d([0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.05, 0.15, -0.25, 0.35, 0.45, -0.55], [4, 3]),
    true,
    'w1',
  );
  const w2 = tf.variable(tf.tensor2d([0.2, -0.1, 0.3, 0.7, -0.4, 0.5], [3, 2]), true, 'w2');
  const x = tf.tensor2d([1, 2, 3, 4, -1, 0.5, 2, -3], [2, 4]);
  const y = tf.oneHot(tf.tensor1d([0, 1], 'int32'), 2);
  const { value, grads } = tf.variableGrads(
    () => tf.losses.softmaxCrossEntropy(y, tf.matMul(tf.relu(tf.matMul(x, w1)), w2)) as tf.Scalar,
  );
  const out: Record<string, Float32Array> = {};
  for (const [name, grad] of Object.entries(grads)) out[name] = (await grad.data()) as Float32Array;
  const loss = (await value.data())[0] as number;
  tf.dispose([w1, w2, x, y, value, ...Object.values(grads)]);
  return { loss, grads: out };
}

describe('selectBackend', () => {
  it('rejects an unknown backend name', async () => {
    await expect(selectBackend({ backend: 'tpu' as never })).rejects.toThrow(
      new TypeError('Expected one of auto, webgpu, tensorflow, wasm, cpu for backend but received "tpu"'),
    );
  });

  it('uses cpu when told to and logs the choice', async () => {
    const logger = recordingLogger();
    const selection = await selectBackend({ backend: 'cpu', logger });
    expect(selection.name).toBe('cpu');
    expect(tf.getBackend()).toBe('cpu');
    expect(logger.events).toEqual([
      { event: 'backend.selected', fields: { backend: 'cpu', detail: 'JavaScript kernels' } },
    ]);
  });

  it('fails loudly when the named tensorflow backend is not installed', async () => {
    const error = await selectBackend({ backend: 'tensorflow' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WorkerError);
    expect((error as WorkerError).code).toBe('BACKEND_UNAVAILABLE');
    expect((error as Error).message).toContain('@tensorflow/tfjs-node not installed');
  });

  it('skips a software WebGPU adapter (lavapipe in CI) in the automatic order and picks wasm', async () => {
    const logger = recordingLogger();
    const selection = await selectBackend({ logger });
    if (selection.name === 'webgpu') {
      // A machine with a real GPU: the automatic order must have taken a hardware adapter.
      expect(selection.detail).not.toMatch(/software|llvmpipe|lavapipe|swiftshader/i);
      return;
    }
    expect(selection.name).toBe('wasm');
    expect(selection.attempts.map((a) => [a.name, a.ok])).toEqual([
      ['webgpu', false],
      ['tensorflow', false],
      ['wasm', true],
    ]);
    expect(selection.attempts[0]?.detail).toMatch(/^software adapter \(mesa software llvmpipe/);
    expect(logger.events.map((e) => e.event)).toEqual([
      'backend.skipped',
      'backend.skipped',
      'backend.selected',
    ]);
  });

  it('runs on webgpu over the software Vulkan driver when allowed, computing like cpu', async () => {
    await selectBackend({ backend: 'cpu' });
    const a = tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3]);
    const expected = await tf.matMul(a, a, false, true).data();
    const cpuStep = await trainingStep();

    const selection = await selectBackend({ allowSoftwareWebGpu: true });
    expect(selection.name).toBe('webgpu');
    expect(selection.attempts).toEqual([{ name: 'webgpu', ok: true, detail: selection.detail }]);
    expect(tf.getBackend()).toBe('webgpu');
    const named = await selectBackend({ backend: 'webgpu' });
    expect(named.name).toBe('webgpu');

    const b = tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3]);
    const product = tf.matMul(b, b, false, true);
    expect(Array.from(await product.data())).toEqual(Array.from(expected));
    const gpuStep = await trainingStep();
    expect(gpuStep.loss).toBeCloseTo(cpuStep.loss, 4);
    for (const [name, grad] of Object.entries(cpuStep.grads)) {
      const gpuGrad = gpuStep.grads[name];
      expect(gpuGrad?.length).toBe(grad.length);
      grad.forEach((g, i) => {
        expect(gpuGrad?.[i]).toBeCloseTo(g, 4);
      });
    }
  });
});
