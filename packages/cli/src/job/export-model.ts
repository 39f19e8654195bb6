import { existsSync } from 'node:fs';
import path from 'node:path';
import { findCheckpoint } from '@edl/master';
import { normalizeLocation, putObject } from '@edl/storage';
import { loadNonTrainableWeights, ModelRunner, selectBackend, tf } from '@edl/worker';
import { UsageError } from '../command.js';
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
}

/**
 * Builds the model of `modelDef`, loads a checkpoint into it (a checkpoint file, or the newest of a
 * checkpoint directory; batch-norm statistics from beside a local one) and writes it in
 * TensorFlow.js's Layers format: `model.json` (topology and weights manifest) and `weights.bin`,
 * which `tf.loadLayersModel` reads with no elasticdl-ts code. The checkpoint and `output` may be
 * `s3://` locations (each file is then committed whole, weights first).
 */
export async function exportModel(
  modelDef: string,
  checkpoint: string,
  output: string,
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
    runner.assign(loaded.store.variables, loaded.store.version);
    const nonTrainable = isUrl(file) ? undefined : loadNonTrainableWeights(file);
    if (nonTrainable !== undefined) runner.assignNonTrainable(nonTrainable);
    const dir = isUrl(output) ? output.replace(/\/+$/, '') : path.resolve(output);
    const modelJson = isUrl(dir) ? `${dir}/${EXPORTED_MODEL_JSON}` : path.join(dir, EXPORTED_MODEL_JSON);
    const weights = isUrl(dir) ? `${dir}/${EXPORTED_WEIGHTS}` : path.join(dir, EXPORTED_WEIGHTS);
    await runner.model.save(
      tf.io.withSaveHandler(async (artifacts) => {
        const data =
          artifacts.weightData === undefined
            ? new ArrayBuffer(0)
            : tf.io.CompositeArrayBuffer.join(artifacts.weightData);
        await putObject(weights, new Uint8Array(data));
        const json: tf.io.ModelJSON = {
          modelTopology: artifacts.modelTopology as tf.io.ModelJSON['modelTopology'],
          format: artifacts.format ?? 'layers-model',
          generatedBy: `TensorFlow.js tfjs-layers, exported by elasticdl-ts (edl export)`,
          convertedBy: null,
          weightsManifest: [{ paths: [`./${EXPORTED_WEIGHTS}`], weights: artifacts.weightSpecs ?? [] }],
        };
        await putObject(modelJson, Buffer.from(`${JSON.stringify(json)}\n`, 'utf8'));
        return { modelArtifactsInfo: tf.io.getModelArtifactsInfoForJSON(artifacts) };
      }),
    );
    return { dir, modelJson, weights, modelVersion: loaded.store.version, checkpoint: file };
  } finally {
    runner.model.dispose();
  }
}
