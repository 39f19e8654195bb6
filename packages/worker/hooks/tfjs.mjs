// @ts-check
/**
 * What `@tensorflow/tfjs` resolves to in a model definition: the worker's own tfjs-core and
 * tfjs-layers (the union package's core and layers parts; its converter and tf.data are not
 * included), so that a model written against the union package computes on the worker's engine.
 */
export * from '@tensorflow/tfjs-core';
export * from '@tensorflow/tfjs-layers';
