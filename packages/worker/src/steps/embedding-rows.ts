import { tf } from '../../hooks/tfjs-commonjs.mjs';
import type { EmbeddingContext } from '../embedding/embedding-context.js';
import { prepareEmbeddings } from '../embedding/embedding-step.js';
import type { ParameterServerRows } from '../embedding/parameter-server-rows.js';
import type { Features } from '../model-definition.js';
import type { StepContext } from './step-context.js';

/** A model's distributed embedding tables as the steps of one worker reach them. */
export interface StepEmbeddings {
  /** The job's parameter-server shards. */
  readonly servers: ParameterServerRows;
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
  if (embeddings === undefined) return fn(undefined);
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
