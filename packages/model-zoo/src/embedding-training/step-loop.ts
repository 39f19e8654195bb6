import type { EmbeddingClient } from '@edl/proto';
import {
  type EmbeddingRowSource,
  embeddingGradients,
  type Features,
  type LossFn,
  prepareEmbeddings,
  type RowGradients,
  tf,
  type tfl,
  withEmbeddingContext,
} from '@edl/worker';

/** Where a step pulls rows from and pushes their gradients to. */
export interface EmbeddingRowStore extends EmbeddingRowSource {
  push(rows: readonly RowGradients[], modelVersion: number): Promise<void>;
}

/** The parameter-server shards behind an `EmbeddingClient` as a row store; all tables in parallel. */
export function embeddingClientStore(client: EmbeddingClient, workerId: string): EmbeddingRowStore {
  return {
    rows: (table, ids, _dim, forTraining) => client.pull(table, ids, { create: forTraining }),
    push: async (rows, modelVersion) => {
      await Promise.all(
        rows.map((r) => client.push(r.table, r.ids, r.gradients, { modelVersion, workerId })),
      );
    },
  };
}

/** Bytes of embedding rows a loop moved: ids (8 bytes each) and floats (4), each way. */
export interface RowTraffic {
  pulledBytes: number;
  pushedBytes: number;
}

/**
 * A worker's training step with distributed embeddings, driven by hand: the protocol of
 * `prepareEmbeddings` (pull the minibatch's unique ids' rows), `embeddingGradients` (loss and
 * gradients inside the embedding context), the rows gradients pushed to the store and the dense
 * gradients applied by a local TensorFlow.js optimizer. A stand-in for `edl train --num-ps` in the
 * DeepFM test and `bench/sparse-ps.mjs` until the worker's step loop talks to the shards itself.
 */
export class EmbeddingStepLoop {
  readonly #model: tfl.LayersModel;
  readonly #loss: LossFn;
  readonly #optimizer: tf.Optimizer;
  readonly #store: EmbeddingRowStore;
  readonly #denseVariables: tf.Variable[];
  /** Steps taken; also the model version pushes carry. */
  steps = 0;
  /** Bytes moved so far. */
  readonly traffic: RowTraffic = { pulledBytes: 0, pushedBytes: 0 };

  constructor(model: tfl.LayersModel, loss: LossFn, optimizer: tf.Optimizer, store: EmbeddingRowStore) {
    this.#model = model;
    this.#loss = loss;
    this.#optimizer = optimizer;
    this.#store = store;
    this.#denseVariables = model.trainableWeights.map((w) => w.read() as tf.Variable);
  }

  /** The model inputs of `features`, in the model's input order (named features by input name). */
  inputs(features: Features): tf.Tensor[] {
    if (features instanceof tf.Tensor) return [features];
    return this.#model.inputNames.map((name) => {
      const tensor = features[name];
      if (tensor === undefined)
        throw new RangeError(
          `Expected a feature '${name}' for model input '${name}' but the minibatch has ${Object.keys(features).join(', ')}`,
        );
      return tensor;
    });
  }

  /** One training step on a minibatch; resolves to its loss. */
  async train(features: Features, labels: tf.Tensor): Promise<number> {
    const inputs = this.inputs(features);
    const context = await prepareEmbeddings(this.#model, inputs, this.#store, true);
    try {
      const step = await embeddingGradients(
        context,
        () => this.#loss(labels, this.#model.apply(inputs, { training: true }) as tf.Tensor),
        this.#denseVariables,
      );
      this.#optimizer.applyGradients(step.dense);
      tf.dispose(Object.values(step.dense));
      await this.#store.push(step.rows, this.steps);
      let ids = 0;
      let floats = 0;
      for (const { ids: rowIds, gradients } of step.rows) {
        ids += rowIds.length;
        floats += gradients.length;
      }
      this.traffic.pulledBytes += ids * 8 + context.rowBytesPerStep() / 2;
      this.traffic.pushedBytes += ids * 8 + floats * 4;
      this.steps++;
      return step.loss;
    } finally {
      context.dispose();
    }
  }

  /** The model's outputs for a minibatch, rows read without creating any (evaluation). */
  async predict(features: Features): Promise<Float32Array> {
    const inputs = this.inputs(features);
    const context = await prepareEmbeddings(this.#model, inputs, this.#store, false);
    try {
      const output = withEmbeddingContext(context, () => this.#model.predict(inputs) as tf.Tensor);
      const values = (await output.data()) as Float32Array;
      output.dispose();
      return values;
    } finally {
      context.dispose();
    }
  }
}
