// @ts-check
/**
 * What `require('@tensorflow/tfjs')` resolves to in a CommonJS model definition: the worker's own
 * tfjs-core and tfjs-layers (see tfjs.mjs).
 */
module.exports = { ...require('@tensorflow/tfjs-core'), ...require('@tensorflow/tfjs-layers') };
