import { existsSync } from 'node:fs';
import path from 'node:path';
import { findCheckpoint } from '@edl/master';
import { normalizeLocation, putObject } from '@edl/storage';
import { loadNonTrainableWeights, ModelRunner, selectBackend, tf } from '@edl/worker';
import { UsageError } from '../command.js';
import { readShardDenseVariables } from './export-dense.js';
import { DEFAULT_MAX_TABLE_BYTES, type DenseTable, readDenseTables } from './export-tables.js';
import { embeddingsOf, withStandardEmbeddings } from './export-topology.js';
import { isUrl } from './job-options.js';
import { loadModel } from './model-and-readers.js';

/** File names of an exported model: TensorFlow.js's Layers format. */
export const EXPORTED_MODEL_JSON = 'model.json';
export const EXPORTED_WEIGHTS = 'weights.bin';

/** What {@link exportModel} wrote. */
export interface ExportedModel {
  readonly dir: string;
  readonly modelJson: string;
  readonly weights: string;
  readonly modelVersion: number;
  readonly checkpoint: string;
  /** The embedding tables written as `embeddings` weights of standard layers, with their sizes. */
  readonly tables: readonly { name: string; inputDim: number; dim: number; rowsCreated: number }[];
}

/** Options of {@link exportModel}. */
export interface ExportOptions {
  /** The largest embedding table to write, in bytes of float32 weights; default 1 GiB. */
  readonly maxTableBytes?: number;
}

/**
 * Builds the model of `modelDef`, loads a checkpoint into it (a checkpoint file, or the newest of a
 * checkpoint directory; batch-norm statistics from beside a local one) and writes it in
 * TensorFlow.js's Layers format: `model.json` (topology and weights manifest) and `weights.bin`,
 * which `tf.loadLayersModel` reads with no elasticdl-ts code. The checkpoint and `output` may be
 * `s3://` locations (each file is then committed whole, weights first).
 *
 * A distributed embedding layer (its table on parameter-server shards, `edl train --num-ps`)
 * becomes a standard `Embedding` layer (see `standardEmbeddingTopology`) whose `embeddings` weight
 * is the table read from the checkpoint's shard files, whole: a table above `maxTableBytes` is an
 * error naming it.
 */
export async function exportModel(
  modelDef: string,
  checkpoint: string,
  output: string,
  options: ExportOptions = {},
): Promise<ExportedModel> {
  const source = normalizeLocation(checkpoint);
  if (!isUrl(source) && !existsSync(source))
    throw new UsageError(`--model-checkpoint ${source} does not exist`);
  const found = await findCheckpoint(source);
  if (found === undefined) throw new UsageError(`--model-checkpoint ${source} holds no checkpoint`);
  const { path: file, checkpoint: loaded } = found;
  // Only weights are copied: the cpu backend needs no set-up and gives the exact float32 values.
  // PROD silences its "install tfjs-node" banner, which is no advice for copying weights.
  tf.env().set('PROD', true);
  if (tf.getBackend() !== 'cpu') await selectBackend({ backend: 'cpu' });
  const definition = await loadModel(modelDef);
  const runner = new ModelRunner(definition);
  try {
    // Beside the checkpoint: in its directory, or under its object-store prefix.
    const partsDir = isUrl(file) ? file.slice(0, file.lastIndexOf('/') + 1) : path.dirname(file);
    // A job with its dense variables on the shards: the master's file holds only their initial values.
    const onShards =
      loaded.parameterServers === undefined
        ? undefined
        : await readShardDenseVariables(partsDir, loaded.store.version);
    runner.assign(onShards ?? loaded.store.variables, loaded.store.version);
    const nonTrainable = isUrl(file) ? undefined : loadNonTrainableWeights(file);
    if (nonTrainable !== undefined) runner.assignNonTrainable(nonTrainable);
    const sparse = embeddingsOf(runner.model);
    let tables: DenseTable[] = [];
    if (sparse.requests.length > 0) {
      if (loaded.parameterServers === undefined)
        throw new UsageError(
          `Checkpoint ${file} has no parameter-server shard files, so the embedding tables of layers ${sparse.layers.map((l) => `'${l.layer}'`).join(', ')} cannot be exported: use a checkpoint of a job run with --num-ps`,
        );
      tables = await readDenseTables(
        partsDir,
        loaded.store.version,
        sparse.requests,
        options.maxTableBytes ?? DEFAULT_MAX_TABLE_BYTES,
      );
    }
    const dir = isUrl(output) ? output.replace(/\/+$/, '') : path.resolve(output);
    const modelJson = isUrl(dir) ? `${dir}/${EXPORTED_MODEL_JSON}` : path.join(dir, EXPORTED_MODEL_JSON);
    const weights = isUrl(dir) ? `${dir}/${EXPORTED_WEIGHTS}` : path.join(dir, EXPORTED_WEIGHTS);
    await runner.model.save(
      tf.io.withSaveHandler(async (artifacts) => {
        const data =
          artifacts.weightData === undefined
            ? new ArrayBuffer(0)
            : tf.io.CompositeArrayBuffer.join(artifacts.weightData);
        const standard = withStandardEmbeddings(artifacts, sparse.layers, tables);
        await putObject(
          weights,
          standard.tableData.length === 0
            ? new Uint8Array(data)
            : Buffer.concat([new Uint8Array(data), ...standard.tableData]),
        );
        const json: tf.io.ModelJSON = {
          modelTopology: standard.topology as tf.io.ModelJSON['modelTopology'],
          format: artifacts.format ?? 'layers-model',
          generatedBy: `TensorFlow.js tfjs-layers, exported by elasticdl-ts (edl export)`,
          convertedBy: null,
          weightsManifest: [{ paths: [`./${EXPORTED_WEIGHTS}`], weights: standard.weightSpecs }],
        };
        await putObject(modelJson, Buffer.from(`${JSON.stringify(json)}\n`, 'utf8'));
        return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
      }),
    );
    return {
      dir,
      modelJson,
      weights,
      modelVersion: loaded.store.version,
      checkpoint: file,
      tables: tables.map(({ name, inputDim, dim, rowsCreated }) => ({ name, inputDim, dim, rowsCreated })),
    };
  } finally {
    runner.model.dispose();
  }
}
