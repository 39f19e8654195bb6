// The types of tfjs-commonjs.mjs: what an ES import of each package would give.

export * as tfBackendCpu from '@tensorflow/tfjs-backend-cpu';
export * as tfBackendWasm from '@tensorflow/tfjs-backend-wasm';
export * as tf from '@tensorflow/tfjs-core';
export * as tfl from '@tensorflow/tfjs-layers';
