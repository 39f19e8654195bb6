/**
 * Model definition module (`--model-def deepfm-dense`): the same DeepFM with `tfl.layers.embedding`
 * tables of 10^4 rows (the click log's `vocabulary` must not exceed it), trained through today's
 * dense path: the whole tables' gradients pushed and the whole tables pulled every step.
 */
import { deepFmDefinition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default deepFmDefinition({ embeddings: 'dense', vocabulary: 10_000 });
