import type { OptimizerConfig } from '@edl/common';
import { parseExamples } from '@edl/proto/example';
import { batchRecords, type DatasetFn, embedding, type ModelDefinition, tf, tfl } from '@edl/worker';
import { type ClickLogLayout, clickLogSpec, resolveClickLogLayout } from '../click-log/schema.js';
import { FactorizationMachine } from './fm-layer.js';

/**
 * The embedding tables of DeepFM: `embeddings` (`dim` floats per id, shared by the FM and the deep
 * part) and `linear` (1 float per id, the FM's first-order weights). Every categorical feature
 * reads the same two tables (ids of different features are different ids of one vocabulary).
 */
export const DEEPFM_TABLES = { embeddings: 'click_embeddings', linear: 'click_linear' } as const;

/** Options of {@link buildDeepFmModel}. */
export interface DeepFmOptions extends ClickLogLayout {
  /**
   * `distributed` (default): the tables live on the parameter servers, read through the
   * `embedding()` layer of @edl/worker; `dense`: `tfl.layers.embedding` weights of the model, the
   * baseline, which needs `vocabulary`.
   */
  readonly embeddings?: 'distributed' | 'dense';
  /** Rows of a dense table (ids must lie below it); ignored by the distributed layer. */
  readonly vocabulary?: number;
  /** Distributed only: ids hashed into this many rows (`id % numBuckets`); default unbounded ids. */
  readonly numBuckets?: number;
  /** Floats per embedding row (default 16). */
  readonly dim?: number;
  /** Units of the deep part's hidden layers (default [64, 32]). */
  readonly hidden?: readonly number[];
}

/**
 * DeepFM (Guo et al., 2017): the ids of every categorical feature look up shared embeddings, which
 * feed both a factorization machine (first-order weights plus pairwise inner products) and a deep
 * part (the flattened embeddings and the numeric features through ReLU layers); the click
 * probability is the sigmoid of their sum. Inputs: `ids` `[categorical]` int32 and `numeric`
 * `[numeric]` float32; output `[1]`.
 */
export function buildDeepFmModel(options: DeepFmOptions = {}): tfl.LayersModel {
  const { categorical, numeric } = resolveClickLogLayout(options);
  const dim = options.dim ?? 16;
  const ids = tfl.input({ name: 'ids', shape: [categorical], dtype: 'int32' });
  const numbers = tfl.input({ name: 'numeric', shape: [numeric] });
  const table = (name: string, outputDim: number): tfl.layers.Layer => {
    if (options.embeddings !== 'dense')
      return embedding({
        name,
        outputDim,
        ...(options.numBuckets === undefined ? {} : { numBuckets: options.numBuckets }),
      });
    if (options.vocabulary === undefined)
      throw new RangeError('Expected options.vocabulary (the rows of the table) for a dense DeepFM');
    return tfl.layers.embedding({ name, inputDim: options.vocabulary, outputDim });
  };
  const embedded = table(DEEPFM_TABLES.embeddings, dim).apply(ids) as tfl.SymbolicTensor;
  const linear = table(DEEPFM_TABLES.linear, 1).apply(ids) as tfl.SymbolicTensor;
  const fm = new FactorizationMachine({ name: 'fm' }).apply([embedded, linear]) as tfl.SymbolicTensor;
  let deep = tfl.layers
    .concatenate({ name: 'deep_input' })
    .apply([tfl.layers.flatten({ name: 'flat_embeddings' }).apply(embedded) as tfl.SymbolicTensor, numbers]);
  (options.hidden ?? [64, 32]).forEach((units, i) => {
    deep = tfl.layers
      .dense({
        name: `deep_${i}`,
        units,
        activation: 'relu',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 31 + i }),
      })
      .apply(deep);
  });
  const deepOut = tfl.layers
    .dense({ name: 'deep_out', units: 1, kernelInitializer: tfl.initializers.glorotUniform({ seed: 30 }) })
    .apply(deep) as tfl.SymbolicTensor;
  const logit = tfl.layers.add({ name: 'logit' }).apply([fm, deepOut]);
  const probability = tfl.layers.activation({ name: 'click', activation: 'sigmoid' }).apply(logit);
  return tfl.model({ name: 'deepfm', inputs: [ids, numbers], outputs: probability as tfl.SymbolicTensor });
}

/**
 * datasetFn over serialized click Examples (`clickLogSpec`, from TFRecord files): each minibatch's
 * Examples parsed in one call, then `{ ids, numeric }` features and `[n, 1]` click labels.
 */
export function clickLogDatasetFn(layout: ClickLogLayout = {}): DatasetFn<Uint8Array> {
  const spec = clickLogSpec(layout);
  const { categorical, numeric } = resolveClickLogLayout(layout);
  return async function* (records, mode, metadata) {
    for await (const batch of batchRecords(records, metadata.minibatchSize)) {
      const n = batch.length;
      const parsed = parseExamples(batch, spec);
      const features = {
        ids: tf.tensor2d(Int32Array.from(parsed.ids.values), [n, categorical], 'int32'),
        numeric: tf.tensor2d(parsed.numeric.values, [n, numeric]),
      };
      if (mode === 'prediction') yield { features };
      else yield { features, labels: tf.tensor2d(Float32Array.from(parsed.click.values), [n, 1]) };
    }
  };
}

/** Binary cross-entropy of click probabilities, the minibatch's mean. */
export function clickLoss(labels: tf.Tensor, outputs: tf.Tensor): tf.Scalar {
  return tf.tidy(() => tf.mean(tfl.metrics.binaryCrossentropy(labels, outputs)) as tf.Scalar);
}

/** The optimizer of DeepFM's dense layers and of its tables' rows (Adagrad, as in ElasticDL's). */
export const DEEPFM_OPTIMIZER = { type: 'adagrad', learningRate: 0.05 } as const satisfies OptimizerConfig;

/**
 * The table specs a parameter-server shard takes (`edl ps --tables`) for DeepFM's tables: the
 * same optimizer as the dense layers, rows seeded by `seed`.
 */
export function deepFmTableSpecs(options: { dim?: number; seed?: number; optimizer?: OptimizerConfig } = {}) {
  const optimizer = options.optimizer ?? DEEPFM_OPTIMIZER;
  const seed = options.seed ?? 42;
  return [
    { name: DEEPFM_TABLES.embeddings, dim: options.dim ?? 16, optimizer, seed },
    { name: DEEPFM_TABLES.linear, dim: 1, optimizer, seed },
  ];
}

/** The DeepFM model definition: binary cross-entropy, Adagrad, accuracy and AUC. */
export function deepFmDefinition(options: DeepFmOptions = {}): ModelDefinition<Uint8Array> {
  return {
    model: () => buildDeepFmModel(options),
    loss: clickLoss,
    optimizer: { name: 'adagrad', params: { learningRate: DEEPFM_OPTIMIZER.learningRate } },
    datasetFn: clickLogDatasetFn(options),
    evalMetrics: { accuracy: 'accuracy', auc: 'auc' },
  };
}
