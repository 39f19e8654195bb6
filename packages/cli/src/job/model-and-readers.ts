import { createDataReader, type DataReader, type JsonObject } from '@edl/data';
import type { JobType } from '@edl/master';
import { loadModelDefinition, type ModelDefinition } from '@edl/worker';
import type { JobOptions } from './job-options.js';
import { resolveModelDef } from './model-def-path.js';

export { resolveModelDef };

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

/** The readers of a job, by the role its type gives each data option. */
export interface JobReaders {
  readonly trainingReader?: DataReader<unknown>;
  readonly evaluationReader?: DataReader<unknown>;
  readonly predictionReader?: DataReader<unknown>;
  /** Closes every reader opened. */
  close(): Promise<void>;
}

/**
 * Opens the readers a job of `jobType` reads: training data for training, validation data unless
 * it predicts, prediction data when it does. If one fails to open, those opened are closed.
 */
export async function openJobReaders(
  jobType: JobType,
  options: Pick<
    JobOptions,
    'trainingData' | 'validationData' | 'predictionData' | 'dataReader' | 'dataReaderParams'
  >,
  definition: ModelDefinition<unknown>,
): Promise<JobReaders> {
  const opened: DataReader<unknown>[] = [];
  const close = async () => {
    for (const reader of opened.splice(0)) await reader.close?.();
  };
  const open = async (origin: string | undefined, wanted: boolean) => {
    if (origin === undefined || !wanted) return undefined;
    const reader = await openReader(origin, definition, options.dataReader, options.dataReaderParams);
    opened.push(reader);
    return reader;
  };
  try {
    const trainingReader = await open(options.trainingData, jobType.startsWith('training'));
    const evaluationReader = await open(options.validationData, jobType !== 'prediction');
    const predictionReader = await open(options.predictionData, jobType === 'prediction');
    return {
      ...(trainingReader ? { trainingReader } : {}),
      ...(evaluationReader ? { evaluationReader } : {}),
      ...(predictionReader ? { predictionReader } : {}),
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
