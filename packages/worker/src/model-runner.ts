import { describeValue } from '@edl/common';
import { accuracyPartial, aucPartial, type MetricPartial, msePartial, type NamedTensor } from '@edl/proto';
import type * as tfl from '@tensorflow/tfjs-layers';
import { tf } from '../hooks/tfjs-commonjs.mjs';
import {
  type EmbeddingContext,
  type RowGradients,
  withEmbeddingContext,
} from './embedding/embedding-context.js';
import { WorkerError } from './errors.js';
import type { Features, Minibatch, ModelDefinition } from './model-definition.js';

/** Where a training minibatch came from, for the error of a non-finite loss or gradient. */
export interface StepOrigin {
  readonly taskId: number;
  readonly shardName: string;
  /** Records [rangeStart, rangeEnd) of the shard. */
  readonly rangeStart: number;
  readonly rangeEnd: number;
}

/** Options of {@link ModelRunner}. */
export interface ModelRunnerOptions {
  /**
   * Accept a NaN or infinite loss or gradient instead of failing with `NON_FINITE` (default false:
   * like Keras's `TerminateOnNaN`, one non-finite step stops training, before the master applies it).
   */
  readonly allowNonFinite?: boolean;
}

/** The likely causes of a non-finite loss or gradient, for its error message. */
const NON_FINITE_HINTS =
  'Likely causes: a CSV header row read as data (set {"header": true} in --data-reader-params), ' +
  'inputs not scaled to a small range (divide pixels by 255, standardise large numbers), ' +
  'labels outside what the loss expects, or a learning rate too high. ' +
  '--allow-non-finite trains on regardless.';

/** Loss and gradients of one minibatch, read back from the backend. */
export interface StepResult {
  readonly loss: number;
  readonly gradients: NamedTensor[];
  /** The rows gradients of the distributed embedding tables, for the parameter-server shards. */
  readonly rows?: RowGradients[];
}

/**
 * The model of one worker: its trainable variables by name, the model version they hold, and the
 * three computations of ElasticDL's worker-pipeline design (compute_loss with gradients, compute_metrics, compute_predict).
 * Values are read with `await data()`: `dataSync` is not available on every backend (webgpu).
 */
export class ModelRunner {
  readonly model: tfl.LayersModel;
  readonly #definition: ModelDefinition<unknown>;
  readonly #variables = new Map<string, tf.Variable>();
  readonly #allowNonFinite: boolean;
  /** The model version the local variables hold; -1 before the first pull. */
  version = -1;

  constructor(definition: ModelDefinition<unknown>, options: ModelRunnerOptions = {}) {
    this.#definition = definition;
    this.#allowNonFinite = options.allowNonFinite === true;
    const model = definition.model() as unknown;
    const candidate = model as Partial<tfl.LayersModel> | null;
    if (
      candidate === null ||
      typeof candidate !== 'object' ||
      typeof candidate.apply !== 'function' ||
      !Array.isArray(candidate.trainableWeights)
    ) {
      throw new WorkerError(
        'MODEL_DEF_INVALID',
        `Expected a tf.LayersModel from model() but received ${describeValue(model)}`,
      );
    }
    this.model = model as tfl.LayersModel;
    for (const weight of this.model.trainableWeights) {
      if (this.#variables.has(weight.originalName)) {
        throw new WorkerError(
          'MODEL_DEF_INVALID',
          `Two trainable weights are named '${weight.originalName}': give the model's layers unique names`,
        );
      }
      // LayerVariable.read() hands out the backing tf.Variable itself.
      this.#variables.set(weight.originalName, weight.read() as tf.Variable);
    }
  }

  /**
   * The non-trainable weights (batch-norm moving statistics). The master holds trainable variables
   * only, so these stay per worker; they are saved at the end of training and loaded for
   * evaluation and prediction by whoever runs them (see `TrainEndCallback`).
   */
  async readNonTrainable(): Promise<NamedTensor[]> {
    return Promise.all(
      this.model.nonTrainableWeights.map(async (weight) => ({
        name: weight.originalName,
        shape: weight.shape as number[],
        values: Float32Array.from((await weight.read().data()) as Float32Array),
      })),
    );
  }

  /** Loads non-trainable weights saved by {@link readNonTrainable}; unknown names are an error. */
  assignNonTrainable(weights: readonly NamedTensor[]): void {
    const byName = new Map(this.model.nonTrainableWeights.map((w) => [w.originalName, w]));
    for (const tensor of weights) {
      const weight = byName.get(tensor.name);
      if (weight === undefined || weight.shape.join(',') !== tensor.shape.join(',')) {
        throw new WorkerError(
          'MODEL_DEF_INVALID',
          `Saved non-trainable weight '${tensor.name}' [${tensor.shape.join(', ')}] does not fit the model`,
        );
      }
      weight.write(tf.tensor(tensor.values, [...tensor.shape], 'float32'));
    }
  }

  /** Names of the trainable variables, the keys the master stores them under. */
  get variableNames(): string[] {
    return [...this.#variables.keys()];
  }

  /** The current values of the trainable variables. */
  async readVariables(): Promise<NamedTensor[]> {
    return Promise.all(
      [...this.#variables].map(async ([name, variable]) => ({
        name,
        shape: variable.shape,
        values: Float32Array.from((await variable.data()) as Float32Array),
      })),
    );
  }

  /** Overwrites the trainable variables with `variables` (by name) and records `version`. */
  assign(variables: readonly NamedTensor[], version: number): void {
    const seen = new Set<string>();
    tf.tidy(() => {
      for (const tensor of variables) {
        const variable = this.#variables.get(tensor.name);
        if (variable === undefined) {
          throw new WorkerError(
            'MASTER_ERROR',
            `The master sent variable '${tensor.name}', which the model lacks`,
          );
        }
        if (variable.shape.join(',') !== tensor.shape.join(',')) {
          throw new WorkerError(
            'MASTER_ERROR',
            `The master sent variable '${tensor.name}' of shape [${tensor.shape.join(', ')}] but the model's is [${variable.shape.join(', ')}]`,
          );
        }
        variable.assign(tf.tensor(tensor.values, [...tensor.shape], 'float32'));
        seen.add(tensor.name);
      }
    });
    const missing = this.variableNames.filter((name) => !seen.has(name));
    if (missing.length > 0) {
      throw new WorkerError('MASTER_ERROR', `The master's model lacks variables ${missing.join(', ')}`);
    }
    this.version = version;
  }

  /**
   * Forward and backward pass: the mean loss and the gradient of every trainable variable. A NaN or
   * infinite loss or gradient throws `NON_FINITE` (unless `allowNonFinite`), naming `origin`.
   * With `embeddings` (the rows a step pulled for the model's distributed embedding layers), the
   * model runs in that context and the result carries each table's rows gradient too.
   */
  async computeGradients(
    batch: Minibatch,
    origin?: StepOrigin,
    embeddings?: EmbeddingContext,
  ): Promise<StepResult> {
    const labels = batch.labels;
    if (labels === undefined)
      throw new WorkerError('DATA_ERROR', 'datasetFn yielded a training minibatch without labels');
    const varList = [...this.#variables.values(), ...(embeddings?.variables ?? [])];
    const loss = () => this.#definition.loss(labels, this.#apply(batch.features, true));
    const { value, grads } = tf.variableGrads(
      embeddings === undefined ? loss : () => withEmbeddingContext(embeddings, loss),
      varList,
    );
    try {
      const lossValue = (await value.data())[0] as number;
      const gradients = await Promise.all(
        [...this.#variables].map(async ([name, variable]) => {
          const grad = grads[variable.name];
          if (grad === undefined)
            throw new WorkerError('MODEL_DEF_INVALID', `No gradient reached variable '${name}'`);
          return { name, shape: variable.shape, values: (await grad.data()) as Float32Array };
        }),
      );
      const rows = await embeddings?.rowGradients(grads);
      if (!this.#allowNonFinite)
        checkFinite(
          lossValue,
          [
            ...gradients,
            ...(rows ?? []).map((r) => ({ name: `embedding table ${r.table}`, values: r.gradients })),
          ],
          origin,
        );
      return rows === undefined ? { loss: lossValue, gradients } : { loss: lossValue, gradients, rows };
    } finally {
      tf.dispose([value, ...Object.values(grads)]);
    }
  }

  /**
   * Model outputs in inference mode, in `embeddings`' context where given (the rows looked up for a
   * model with distributed embedding layers); the caller disposes them.
   */
  predict(features: Features, embeddings?: EmbeddingContext): tf.Tensor {
    const apply = () => tf.tidy(() => this.#apply(features, false));
    return embeddings === undefined ? apply() : withEmbeddingContext(embeddings, apply);
  }

  /** Partial sums of every metric of `evalMetrics` for one minibatch (see {@link predict} for `embeddings`). */
  async computeMetrics(
    batch: Minibatch,
    embeddings?: EmbeddingContext,
  ): Promise<Record<string, MetricPartial>> {
    const labels = batch.labels;
    if (labels === undefined)
      throw new WorkerError('DATA_ERROR', 'datasetFn yielded an evaluation minibatch without labels');
    const outputs = this.predict(batch.features, embeddings);
    try {
      const partials: Record<string, MetricPartial> = {};
      for (const [name, metric] of Object.entries(this.#definition.evalMetrics)) {
        partials[name] =
          typeof metric === 'function'
            ? await metric(labels, outputs)
            : await builtin(metric, labels, outputs);
      }
      return partials;
    } finally {
      outputs.dispose();
    }
  }

  #apply(features: Features, training: boolean): tf.Tensor {
    const inputs =
      features instanceof tf.Tensor
        ? features
        : this.model.inputNames.map((name) => namedInput(features, name));
    const output = this.model.apply(inputs as tf.Tensor | tf.Tensor[], { training });
    if (Array.isArray(output)) {
      throw new WorkerError(
        'MODEL_DEF_INVALID',
        'Models with several outputs are not supported; return one output tensor',
      );
    }
    return output as tf.Tensor;
  }
}

/** Throws `NON_FINITE` when the loss or a gradient value is NaN or infinite. */
function checkFinite(
  loss: number,
  gradients: readonly Pick<NamedTensor, 'name' | 'values'>[],
  origin: StepOrigin | undefined,
): void {
  let what: string | undefined;
  if (!Number.isFinite(loss)) what = `the loss is ${loss}`;
  else {
    for (const { name, values } of gradients) {
      for (let i = 0; i < values.length; i++) {
        const v = values[i] as number;
        // v - v is NaN exactly for NaN and the infinities; cheaper than Number.isFinite per value.
        if (v - v !== 0) {
          what = `the gradient of '${name}' holds ${v} (loss ${loss})`;
          break;
        }
      }
      if (what !== undefined) break;
    }
  }
  if (what === undefined) return;
  const where =
    origin === undefined
      ? 'a training minibatch'
      : `task ${origin.taskId}, records [${origin.rangeStart}, ${origin.rangeEnd}) of '${origin.shardName}'`;
  throw new WorkerError('NON_FINITE', `Non-finite training step on ${where}: ${what}. ${NON_FINITE_HINTS}`);
}

function namedInput(features: Readonly<Record<string, tf.Tensor>>, name: string): tf.Tensor {
  const tensor = features[name];
  if (tensor === undefined) {
    throw new WorkerError(
      'DATA_ERROR',
      `datasetFn yielded no feature '${name}' for the model input of that name`,
    );
  }
  return tensor;
}

/** Labels as a flat vector of class ids or values. */
async function flatLabels(labels: tf.Tensor): Promise<Float32Array> {
  const values = await labels.data();
  if (labels.rank === 2 && (labels.shape[1] as number) > 1) {
    // One-hot labels: back to class ids.
    const ids = tf.argMax(labels, 1);
    const out = Float32Array.from(await ids.data());
    ids.dispose();
    return out;
  }
  return Float32Array.from(values as ArrayLike<number>);
}

async function builtin(
  metric: 'accuracy' | 'auc' | 'mse',
  labels: tf.Tensor,
  outputs: tf.Tensor,
): Promise<MetricPartial> {
  const truth = await flatLabels(labels);
  const classes = outputs.rank === 2 ? (outputs.shape[1] as number) : 1;
  if (metric === 'mse') return msePartial(truth, Float32Array.from(await outputs.data()));
  if (metric === 'auc') {
    if (classes !== 1)
      throw new WorkerError(
        'MODEL_DEF_INVALID',
        `Metric auc needs one output per record but the model has ${classes}`,
      );
    return aucPartial(truth, Float32Array.from(await outputs.data()));
  }
  if (classes === 1) {
    const scores = await outputs.data();
    return accuracyPartial(
      truth,
      Array.from(scores, (s) => (s > 0.5 ? 1 : 0)),
    );
  }
  const ids = tf.argMax(outputs, 1);
  const predicted = Float32Array.from(await ids.data());
  ids.dispose();
  return accuracyPartial(truth, predicted);
}
