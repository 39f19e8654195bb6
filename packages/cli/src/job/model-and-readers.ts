import path from 'node:path';
import { createDataReader, type DataReader, type JsonObject } from '@edl/data';
import { isZooModel, zooModelPath } from '@edl/model-zoo';
import { loadModelDefinition, type ModelDefinition } from '@edl/worker';

/** The file of a `--model-def`: a zoo model name (cifar10, cifar10-small, census) or a path. */
export function resolveModelDef(spec: string): string {
  return isZooModel(spec) ? zooModelPath(spec) : path.resolve(spec);
}

/** Loads the model definition named by `--model-def`. */
export function loadModel(spec: string): Promise<ModelDefinition<unknown>> {
  return loadModelDefinition<unknown>(resolveModelDef(spec));
}

/**
 * Opens the reader of a data origin: the model's `customDataReader` when it has one, otherwise
 * @edl/data's `createDataReader` with `--data-reader` as the type and `--data-reader-params`.
 */
export async function openReader(
  origin: string,
  definition: ModelDefinition<unknown>,
  dataReader: string | undefined,
  params: JsonObject,
): Promise<DataReader<unknown>> {
  if (definition.customDataReader) return definition.customDataReader({ ...params, origin });
  return createDataReader(origin, dataReader === undefined ? params : { ...params, type: dataReader });
}
