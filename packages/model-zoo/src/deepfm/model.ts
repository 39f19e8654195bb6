/**
 * Model definition module (`--model-def deepfm`): DeepFM on a click log of `tf.train.Example`s
 * (`generateClickLog`), its embedding tables on the parameter servers through the distributed
 * `embedding()` layer (ids unbounded). It needs parameter-server shards holding `deepFmTableSpecs()`.
 */
import { deepFmDefinition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default deepFmDefinition();
