import { DenseShardsClient, type EmbeddingClient } from '@edl/proto';
import type * as tflTypes from '@tensorflow/tfjs-layers';
import { tf } from '../../hooks/tfjs-commonjs.mjs';
import type { EmbeddingContext } from '../embedding/embedding-context.js';
import { prepareEmbeddings } from '../embedding/embedding-step.js';
import { modelEmbeddingTables, ParameterServerRows } from '../embedding/parameter-server-rows.js';
import { WorkerError } from '../errors.js';
import type { WorkerLogger } from '../logger.js';
import type { Features } from '../model-definition.js';
import { DenseOnShards, type DensePlacementFunction } from './dense-on-shards.js';
import type { StepContext } from './step-context.js';

/** A model's distributed embedding tables as the steps of one worker reach them. */
export interface StepEmbeddings {
  /** The job's parameter-server shards. */
  readonly servers: ParameterServerRows;
  /** The model's dense variables, when the shards hold them too. */
  readonly dense?: DenseOnShards;
}

/**
 * The parameter-server rows of `model`'s distributed embedding layers, none for a dense model, or
 * the error its first task fails with (NO_PARAMETER_SERVERS, fatal: the master fails the job with
 * it) when the model has such layers and the worker no shards. Mirroring and pushing ahead are off
 * for such a model (the caller turns them off): a step computed before the previous answer would
 * pull rows without that step's rows update, which the replica's checksum cannot confirm.
 */
export function stepEmbeddings(
  model: tflTypes.LayersModel,
  options: {
    readonly workerId: string;
    readonly parameterServers?: EmbeddingClient;
    readonly denseOnShards?: DensePlacementFunction;
    readonly mirrorUpdates?: boolean;
    readonly pushAhead?: boolean | 'auto';
  },
  logger: WorkerLogger,
): { embeddings?: StepEmbeddings; setupError?: WorkerError } {
  const tables = modelEmbeddingTables(model);
  const client = options.parameterServers;
  const place = options.denseOnShards;
  if (client !== undefined && place !== undefined) {
    const dense = new DenseOnShards(new DenseShardsClient(client), place, options.workerId);
    if (options.mirrorUpdates !== false || options.pushAhead)
      logger.info('dense.on_shards', {
        shards: client.numShards,
        note: 'mirrored updates and push-ahead are off: each step pulls the dense variables from the parameter-server shards after the previous step pushed its gradient there',
      });
    return {
      embeddings: {
        servers: new ParameterServerRows({ client, tables, workerId: options.workerId, logger, dense }),
        dense,
      },
    };
  }
  if (tables.length === 0) return {};
  if (client === undefined)
    return {
      setupError: new WorkerError(
        'NO_PARAMETER_SERVERS',
        `The model has distributed embedding layers (tables ${tables.map((t) => `'${t.name}'`).join(', ')}) but the worker has no parameter-server shards: run the job with --num-ps N, or the worker with --ps-addresses`,
      ),
    };
  if (options.mirrorUpdates !== false || options.pushAhead)
    logger.info('embedding.steps', {
      tables: tables.map((t) => t.name).join(','),
      note: 'mirrored updates and push-ahead are off: each step pulls rows after the previous step pushed its rows gradient',
    });
  return {
    embeddings: {
      servers: new ParameterServerRows({ client, tables, workerId: options.workerId, logger }),
    },
  };
}

/**
 * Runs `fn` with the rows of `features`' ids pulled into a step's embedding context (created when
 * `forTraining`, else looked up: an unknown id reads as the initializer's value), or with none when
 * the model has no distributed embedding layers; the context is disposed afterwards.
 */
export async function withStepRows<T>(
  context: StepContext,
  features: Features,
  forTraining: boolean,
  fn: (embeddings: EmbeddingContext | undefined) => Promise<T>,
): Promise<T> {
  const embeddings = context.embeddings;
  if (embeddings === undefined || !embeddings.servers.hasTables) return fn(undefined);
  const { model } = context.runner;
  const inputs =
    features instanceof tf.Tensor
      ? [features]
      : model.inputNames.map((name) => (features as Readonly<Record<string, tf.Tensor>>)[name] as tf.Tensor);
  const rows = await context.timers.time('get_model', () =>
    prepareEmbeddings(model, inputs, embeddings.servers, forTraining),
  );
  try {
    return await fn(rows);
  } finally {
    rows.dispose();
  }
}
