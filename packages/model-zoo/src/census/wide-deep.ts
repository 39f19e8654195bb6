import { batchRecords, type DatasetFn, embedding, type ModelDefinition, tf, tfl } from '@edl/worker';
import { type CensusRecord, censusDefinition, columnIndex, field } from './definition.js';
import { CENSUS_CATEGORICAL, CENSUS_LABEL, CENSUS_NUMERIC } from './schema.js';

/**
 * The distributed embedding tables of the census Wide&Deep model: `wide` (1 float per category
 * value, the linear part) and `deep` (8 floats per category value).
 */
export const CENSUS_WIDE_DEEP_TABLES = { wide: 'census_wide', deep: 'census_deep' } as const;

/**
 * Each categorical column's first id: column c's value v gets `offset[c] + index of v`, and an
 * unknown value `offset[c] + vocabulary size` (a row of its own), so all columns share one id space.
 */
const CATEGORY_OFFSETS: readonly number[] = CENSUS_CATEGORICAL.reduce(
  (offsets, column, c) => {
    offsets.push((offsets[c] as number) + column.values.length + 1);
    return offsets;
  },
  [0],
);

/** Category ids in all: every column's values and its unknown-value row. */
export const CENSUS_CATEGORY_IDS = CATEGORY_OFFSETS[CENSUS_CATEGORICAL.length] as number;

/**
 * Census Wide&Deep (Cheng et al., 2016) with the distributed `embedding()` layer: the three
 * categorical columns' ids look up a wide table (their first-order weights, summed) and a deep
 * table of 8 floats, whose flattened rows with the four scaled numbers go through a ReLU layer;
 * the income probability is the sigmoid of the wide sum, a linear term of the numbers and the deep
 * output. Inputs: `categories` `[3]` int32 and `numeric` `[4]` float32.
 */
export function buildCensusWideDeepModel(): tfl.LayersModel {
  const categories = tfl.input({ name: 'categories', shape: [CENSUS_CATEGORICAL.length], dtype: 'int32' });
  const numbers = tfl.input({ name: 'numeric', shape: [CENSUS_NUMERIC.length] });
  const wideRows = embedding({ name: CENSUS_WIDE_DEEP_TABLES.wide, outputDim: 1, combiner: 'sum' }).apply(
    categories,
  ) as tfl.SymbolicTensor;
  const wideNumbers = tfl.layers
    .dense({
      name: 'wide_numeric',
      units: 1,
      kernelInitializer: tfl.initializers.glorotUniform({ seed: 41 }),
    })
    .apply(numbers) as tfl.SymbolicTensor;
  const deepRows = embedding({ name: CENSUS_WIDE_DEEP_TABLES.deep, outputDim: 8 }).apply(categories);
  const deepInput = tfl.layers
    .concatenate({ name: 'deep_input' })
    .apply([tfl.layers.flatten({ name: 'flat_deep' }).apply(deepRows) as tfl.SymbolicTensor, numbers]);
  const hidden = tfl.layers
    .dense({
      name: 'deep_hidden',
      units: 16,
      activation: 'relu',
      kernelInitializer: tfl.initializers.glorotUniform({ seed: 42 }),
    })
    .apply(deepInput);
  const deepOut = tfl.layers
    .dense({ name: 'deep_out', units: 1, kernelInitializer: tfl.initializers.glorotUniform({ seed: 43 }) })
    .apply(hidden) as tfl.SymbolicTensor;
  const logit = tfl.layers.add({ name: 'logit' }).apply([wideRows, wideNumbers, deepOut]);
  const probability = tfl.layers.activation({ name: 'income', activation: 'sigmoid' }).apply(logit);
  return tfl.model({
    name: 'census_wide_deep',
    inputs: [categories, numbers],
    outputs: probability as tfl.SymbolicTensor,
  });
}

/** datasetFn of the Wide&Deep model: category ids, scaled numbers, `[n, 1]` labels. */
export const censusWideDeepDatasetFn: DatasetFn<CensusRecord> = async function* (records, mode, metadata) {
  const index = columnIndex(metadata.reader.columns);
  const C = CENSUS_CATEGORICAL.length;
  const M = CENSUS_NUMERIC.length;
  for await (const batch of batchRecords(records, metadata.minibatchSize)) {
    const n = batch.length;
    const ids = new Int32Array(n * C);
    const numeric = new Float32Array(n * M);
    const labels = new Float32Array(n);
    batch.forEach((record, i) => {
      CENSUS_NUMERIC.forEach(({ name, scale }, j) => {
        const value = Number(field(record, name, index));
        if (!Number.isFinite(value))
          throw new RangeError(
            `Expected a number for column ${name} but received ${String(field(record, name, index))}`,
          );
        numeric[i * M + j] = value / scale;
      });
      CENSUS_CATEGORICAL.forEach(({ name, values }, c) => {
        const at = (values as readonly string[]).indexOf(String(field(record, name, index)));
        ids[i * C + c] = (CATEGORY_OFFSETS[c] as number) + (at >= 0 ? at : values.length);
      });
      labels[i] = Number(field(record, CENSUS_LABEL, index) ?? 0);
    });
    const features = { categories: tf.tensor2d(ids, [n, C], 'int32'), numeric: tf.tensor2d(numeric, [n, M]) };
    yield mode === 'prediction' ? { features } : { features, labels: tf.tensor2d(labels, [n, 1]) };
  }
};

/** The table specs a parameter-server shard takes (`edl ps --tables`) for the Wide&Deep tables. */
export function censusWideDeepTableSpecs(seed = 42) {
  const optimizer = { type: 'adam', learningRate: 0.01 } as const;
  return [
    { name: CENSUS_WIDE_DEEP_TABLES.wide, dim: 1, optimizer, seed },
    { name: CENSUS_WIDE_DEEP_TABLES.deep, dim: 8, optimizer, seed },
  ];
}

/**
 * The census Wide&Deep definition: the census model's loss (binary cross-entropy), Adam (lazy Adam
 * on the tables), accuracy and AUC, with this model and its datasetFn.
 */
export function censusWideDeepDefinition(learningRate = 0.01): ModelDefinition<CensusRecord> {
  return {
    ...censusDefinition(learningRate),
    model: buildCensusWideDeepModel,
    datasetFn: censusWideDeepDatasetFn,
  };
}
