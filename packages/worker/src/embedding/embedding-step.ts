import type * as tfTypes from '@tensorflow/tfjs-core';
import type * as tflTypes from '@tensorflow/tfjs-layers';
import { tf } from '../../hooks/tfjs-commonjs.mjs';
import {
  EmbeddingContext,
  EmbeddingError,
  type RowGradients,
  withEmbeddingContext,
} from './embedding-context.js';
import { type DistributedEmbedding, isDistributedEmbedding } from './embedding-layer.js';
import { uniqueIds } from './unique-ids.js';

/**
 * Where a step gets embedding rows: the parameter-server shards over RPC, or an in-process table.
 * `forTraining` asks for a pull that creates missing rows; otherwise a lookup that creates none.
 */
export interface EmbeddingRowSource {
  rows(table: string, ids: Float64Array, dim: number, forTraining: boolean): Promise<Float32Array>;
}

/** A distributed embedding layer of a model and the model input its ids come from. */
export interface EmbeddingFeed {
  readonly layer: DistributedEmbedding;
  /** Indices into the model's inputs, one per call of the layer in the model. */
  readonly inputIndices: readonly number[];
}

/**
 * The distributed embedding layers of `model` (its own layers, not those of nested models) and the
 * model inputs that feed them. Each must take a model input directly: the step reads the ids
 * before the model runs, to pull their rows.
 */
export function embeddingFeeds(model: tflTypes.LayersModel): EmbeddingFeed[] {
  const feeds: EmbeddingFeed[] = [];
  for (const layer of model.layers) {
    if (!isDistributedEmbedding(layer)) continue;
    const inputIndices = layer.inboundNodes.map((node) => {
      const tensor = node.inputTensors[0];
      const index = tensor === undefined ? -1 : model.inputs.indexOf(tensor);
      if (index < 0)
        throw new EmbeddingError(
          'IDS_NOT_FROM_INPUT',
          `Distributed embedding layer '${layer.name}' takes its ids from ${tensor?.name ?? 'nothing'}, not from a model input: the step must read the ids before the model runs`,
        );
      return index;
    });
    feeds.push({ layer, inputIndices });
  }
  return feeds;
}

/**
 * The first half of a step with distributed embeddings. The protocol a step loop follows:
 *
 * 1. `prepareEmbeddings`: for each table, the ids of every layer using it are read from the model
 *    inputs, de-duplicated, and their rows pulled (created if new, when `forTraining`) into a new
 *    {@link EmbeddingContext}: one small `[unique ids, dim]` variable per table.
 * 2. The model runs inside `withEmbeddingContext` (e.g. by {@link embeddingGradients}); each layer
 *    gathers its rows from the context.
 * 3. The gradients of the rows variables are the per-id rows gradients: push `(ids, gradients)` to
 *    each table (`EmbeddingContext.rowGradients`); the dense variables' gradients go as today.
 * 4. Dispose the context.
 */
export async function prepareEmbeddings(
  model: tflTypes.LayersModel,
  inputs: tfTypes.Tensor | readonly tfTypes.Tensor[],
  source: EmbeddingRowSource,
  forTraining: boolean,
): Promise<EmbeddingContext> {
  const tensors = Array.isArray(inputs) ? inputs : [inputs as tfTypes.Tensor];
  const byTable = new Map<string, { dim: number; layers: string[]; ids: Float64Array[] }>();
  for (const { layer, inputIndices } of embeddingFeeds(model)) {
    const entry = byTable.get(layer.table) ?? { dim: layer.outputDim, layers: [], ids: [] };
    if (entry.dim !== layer.outputDim)
      throw new EmbeddingError(
        'TABLE_MISMATCH',
        `Layers ${[...entry.layers, layer.name].map((n) => `'${n}'`).join(', ')} share table '${layer.table}' with different output dimensions (${entry.dim} and ${layer.outputDim})`,
      );
    entry.layers.push(layer.name);
    for (const index of inputIndices) {
      const tensor = tensors[index];
      if (tensor === undefined)
        throw new RangeError(
          `Expected a tensor for model input ${index} (ids of layer '${layer.name}') but received none`,
        );
      entry.ids.push(layer.tableIds(await tensor.data()));
    }
    byTable.set(layer.table, entry);
  }
  const context = new EmbeddingContext();
  try {
    for (const [table, { dim, ids }] of byTable) {
      const all = new Float64Array(ids.reduce((n, a) => n + a.length, 0));
      let at = 0;
      for (const part of ids) {
        all.set(part, at);
        at += part.length;
      }
      const unique = uniqueIds(all, `the ids of table '${table}'`).ids;
      context.provide(table, unique, await source.rows(table, unique, dim, forTraining), dim);
    }
  } catch (error) {
    context.dispose();
    throw error;
  }
  return context;
}

/**
 * Step 2 of the protocol: the loss and its gradients with respect to the dense variables and to
 * every table's pulled rows, with `loss` (which runs the model) inside `context`.
 */
export async function embeddingGradients(
  context: EmbeddingContext,
  loss: () => tfTypes.Scalar,
  denseVariables: readonly tfTypes.Variable[],
): Promise<{ loss: number; dense: tfTypes.NamedTensorMap; rows: RowGradients[] }> {
  const { value, grads } = withEmbeddingContext(context, () =>
    tf.variableGrads(loss, [...denseVariables, ...context.variables]),
  );
  try {
    const rows = await context.rowGradients(grads);
    const rowNames = new Set(context.variables.map((v) => v.name));
    const dense: tfTypes.NamedTensorMap = {};
    for (const [name, grad] of Object.entries(grads)) if (!rowNames.has(name)) dense[name] = grad;
    return { loss: (await value.data())[0] as number, dense, rows };
  } finally {
    value.dispose();
    for (const v of context.variables) grads[v.name]?.dispose();
  }
}
