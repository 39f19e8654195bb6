/**
 * A model definition for bench/worker-pipeline.mjs: the zoo's CIFAR-10 definition (same records,
 * same datasetFn, same preprocessing on threads, same loss) with a softmax regression on the
 * pixels instead of the CNN. Its compute per minibatch is a few milliseconds, in the range of the
 * input work per minibatch: the input-bound balance of the seed's 2019 worker.
 */
import { cifar10Definition } from '../../packages/model-zoo/dist/index.js';
import { tfl } from '../../packages/worker/dist/index.js';

const definition = cifar10Definition({ learningRate: 0.01 });

export const model = () =>
  tfl.sequential({
    name: 'cifar10_linear',
    layers: [
      tfl.layers.flatten({ name: 'flatten', inputShape: [32, 32, 3] }),
      tfl.layers.dense({
        name: 'logits',
        units: 10,
        activation: 'softmax',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 1 }),
      }),
    ],
  });
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
