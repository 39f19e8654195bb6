/**
 * Model definition module (`--model-def`) of the CIFAR-10 CNN of ElasticDL's model zoo:
 * three blocks of two conv + batch norm + ReLU, max pooling and dropout, then a softmax layer.
 */
import { cifar10Definition } from './definition.js';

const definition = cifar10Definition();

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
