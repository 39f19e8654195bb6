import { type DatasetFn, type ModelDefinition, minibatches, tf, tfl } from '@edl/worker';
import { CENSUS_CATEGORICAL, CENSUS_FEATURES, CENSUS_LABEL, CENSUS_NUMERIC } from './schema.js';

/** A census record as readers yield it: CSV fields (`string[]`) or a table row (column to value). */
export type CensusRecord = readonly string[] | Readonly<Record<string, unknown>>;

/** Wide-and-deep in miniature: normalised numbers and one-hot categories into two dense layers. */
export function buildCensusModel(): tfl.LayersModel {
  return tfl.sequential({
    name: 'census',
    layers: [
      tfl.layers.dense({
        name: 'hidden',
        inputShape: [CENSUS_FEATURES],
        units: 16,
        activation: 'relu',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 11 }),
      }),
      tfl.layers.dense({
        name: 'probability',
        units: 1,
        activation: 'sigmoid',
        kernelInitializer: tfl.initializers.glorotUniform({ seed: 12 }),
      }),
    ],
  });
}

/** Column name to position, from the reader's metadata (CSV header) or the schema order. */
export function columnIndex(
  columns: ReadonlyArray<{ readonly name: string }> | undefined,
): Map<string, number> {
  const names = columns?.map((c) => c.name) ?? [
    ...CENSUS_NUMERIC.map((c) => c.name),
    ...CENSUS_CATEGORICAL.map((c) => c.name),
    CENSUS_LABEL,
  ];
  return new Map(names.map((name, i) => [name, i]));
}

/** The value of column `name` of a record (CSV fields through `index`, or a table row). */
export function field(record: CensusRecord, name: string, index: Map<string, number>): unknown {
  if (Array.isArray(record)) {
    const at = index.get(name);
    if (at === undefined)
      throw new RangeError(`Expected a column '${name}' in the census data but the header lacks it`);
    return record[at];
  }
  return (record as Readonly<Record<string, unknown>>)[name];
}

/** Encodes one record into `out` at `offset`; returns its label. */
function encode(record: CensusRecord, index: Map<string, number>, out: Float32Array, offset: number): number {
  let k = offset;
  for (const { name, scale } of CENSUS_NUMERIC) {
    const value = Number(field(record, name, index));
    if (!Number.isFinite(value))
      throw new RangeError(
        `Expected a number for column ${name} but received ${String(field(record, name, index))}`,
      );
    out[k++] = value / scale;
  }
  for (const { name, values } of CENSUS_CATEGORICAL) {
    const value = String(field(record, name, index));
    const at = (values as readonly string[]).indexOf(value);
    if (at >= 0) out[k + at] = 1;
    k += values.length;
  }
  return Number(field(record, CENSUS_LABEL, index) ?? 0);
}

/** datasetFn of the census model: encode features, batch, labels as [n, 1] floats. */
export const censusDatasetFn: DatasetFn<CensusRecord> = async function* (records, mode, metadata) {
  const index = columnIndex(metadata.reader.columns);
  for await (const batch of minibatches(records, metadata.minibatchSize)) {
    const features = new Float32Array(batch.length * CENSUS_FEATURES);
    const labels = new Float32Array(batch.length);
    batch.forEach((record, i) => {
      labels[i] = encode(record, index, features, i * CENSUS_FEATURES);
    });
    const x = tf.tensor2d(features, [batch.length, CENSUS_FEATURES]);
    yield mode === 'prediction'
      ? { features: x }
      : { features: x, labels: tf.tensor2d(labels, [batch.length, 1]) };
  }
};

/** The census model definition: binary cross-entropy, Adam, accuracy and AUC. */
export function censusDefinition(learningRate = 0.01): ModelDefinition<CensusRecord> {
  return {
    model: buildCensusModel,
    loss: (labels, outputs) => tf.losses.logLoss(labels, outputs) as tf.Scalar,
    optimizer: { name: 'adam', params: { learningRate } },
    datasetFn: censusDatasetFn,
    evalMetrics: { accuracy: 'accuracy', auc: 'auc' },
  };
}
