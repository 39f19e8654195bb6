/**
 * Model definition module (`--model-def`) of a narrow CIFAR-10 CNN with the same layer kinds (conv,
 * batch norm, pooling) as the full one, small enough to train in seconds on two CPU cores: what
 * `edl demo` and the tests train.
 */
import { cifar10Definition } from './definition.js';

const definition = cifar10Definition({ filters: [8, 16], convsPerBlock: 1, dropout: 0, learningRate: 0.02 });

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
