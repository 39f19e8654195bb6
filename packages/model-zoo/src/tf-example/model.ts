/**
 * Model definition module (`--model-def tf-example`): a classifier trained on `tf.train.Example`s,
 * read from TFRecord files (`--training-data DIR_OF_TFRECORDS`) or RecordIO files of Examples.
 */
import { tfExampleDefinition } from './definition.js';

const definition = tfExampleDefinition();

export const model = definition.model;
export const loss = definition.loss;
export const optimizer = definition.optimizer;
export const datasetFn = definition.datasetFn;
export const evalMetrics = definition.evalMetrics;
