/**
 * A model definition for bench/worker-pipeline.mjs: the zoo's CIFAR-10 definition (same records,
 * same datasetFn, same preprocessing on threads) with the smallest CNN of the same layer kinds (one
 * conv of 4 filters, batch norm, pooling, softmax). Its compute per minibatch is close to the input
 * work per minibatch, the balance in which overlapping input with compute pays most.
 */
import { cifar10Definition } from '../../packages/model-zoo/dist/index.js';

const definition = cifar10Definition({ filters: [4], convsPerBlock: 1, dropout: 0, learningRate: 0.02 });

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
