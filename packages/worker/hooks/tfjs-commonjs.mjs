// @ts-check
/**
 * TensorFlow.js for @edl/worker's own modules, loaded with `require`. Its packages are CommonJS
 * bundles; an ES `import` of one makes Node lex the whole bundle for its export names before it
 * runs, which took longer (0.35 CPU-seconds for core and layers) than loading them, in every
 * process of a job. Types come from tfjs-commonjs.d.mts: the same namespaces as an ES import.
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

export const tf = require('@tensorflow/tfjs-core');
export const tfl = require('@tensorflow/tfjs-layers');
export const tfBackendCpu = require('@tensorflow/tfjs-backend-cpu');
export const tfBackendWasm = require('@tensorflow/tfjs-backend-wasm');
