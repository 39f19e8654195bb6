/**
 * Model definition module (`--model-def tf-example`): a classifier trained on `tf.train.Example`s,
 * read from TFRecord files (`--training-data DIR_OF_TFRECORDS`) or RecordIO files of Examples.
 */
import { tfExampleDefinition } from './definition.js';

// The loader takes a default export object as the definition (see --model-def in docs/cli.md).
export default tfExampleDefinition();
