import { type OptimizerConfig, SeededRandom } from '@edl/common';
import { EmbeddingTable } from '@edl/ps';
import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type EmbeddingRowSource,
  embedding,
  embeddingGradients,
  prepareEmbeddings,
  selectBackend,
} from '../src/index.js';

// A planted-model click task: each example has K ids from a vocabulary of V, drawn with a skew
// (low ids common, as in click logs); its label is 1 where the planted scores of its ids sum above 0.
const V = 200;
const K = 3;
const DIM = 8;
const N = 512;
const BATCH = 64;
const EPOCHS = 6;

let xs: tf.Tensor2D;
let ys: tf.Tensor2D;
beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
  const random = new SeededRandom(2024);
  const planted = Float64Array.from({ length: V }, () => random.normal());
  const ids = new Float32Array(N * K);
  const labels = new Float32Array(N);
  for (let n = 0; n < N; n++) {
    let score = 0;
    for (let k = 0; k < K; k++) {
      const id = Math.floor(V * random.next() ** 2);
      ids[n * K + k] = id;
      score += planted[id] as number;
    }
    labels[n] = score + 0.3 * random.normal() > 0 ? 1 : 0;
  }
  xs = tf.tensor2d(ids, [N, K]);
  ys = tf.tensor2d(labels, [N, 1]);
});
afterAll(() => {
  tf.dispose([xs, ys]);
});

function tfjsOptimizer(config: OptimizerConfig): tf.Optimizer {
  if (config.type === 'sgd') return tf.train.sgd(config.learningRate ?? 0.01);
  if (config.type === 'adagrad')
    return tf.train.adagrad(config.learningRate ?? 0.001, config.initialAccumulatorValue);
  if (config.type === 'adam') return tf.train.adam(config.learningRate ?? 0.001, 0.9, 0.999, 1e-7);
  throw new Error(`no TensorFlow.js optimizer for ${config.type} in this test`);
}

const head = () => [
  tfl.layers.flatten(),
  tfl.layers.dense({
    name: 'out',
    units: 1,
    activation: 'sigmoid',
    kernelInitializer: tfl.initializers.glorotUniform({ seed: 1 }),
  }),
];
const lossOf = (labels: tf.Tensor, outputs: tf.Tensor) =>
  tf.mean(tfl.metrics.binaryCrossentropy(labels, outputs)) as tf.Scalar;

/**
 * Trains the same model twice from the same starting weights: once with tfl.layers.embedding and
 * model.fit (the whole table a weight of the model), once with the distributed embedding layer,
 * the rows in an EmbeddingTable standing in for the parameter servers, through the step protocol.
 */
async function trainBothWays(config: OptimizerConfig) {
  const table = new EmbeddingTable({ name: 'ids', dim: DIM, seed: 7, optimizer: config });
  const source: EmbeddingRowSource = {
    rows: async (_table, ids, _dim, forTraining) => (forTraining ? table.pull(ids) : table.lookup(ids)),
  };
  const sparse = tfl.sequential({
    layers: [embedding({ name: 'ids', outputDim: DIM, inputShape: [K] }), ...head()],
  });
  const dense = tfl.sequential({
    layers: [tfl.layers.embedding({ name: 'ids', inputDim: V, outputDim: DIM, inputLength: K }), ...head()],
  });
  // The same start: the dense table holds what the sparse table's rows start at.
  const allIds = Float64Array.from({ length: V }, (_, i) => i);
  dense.getLayer('ids').setWeights([tf.tensor2d(table.lookup(allIds), [V, DIM])]);
  dense.getLayer('out').setWeights(sparse.getLayer('out').getWeights());

  dense.compile({ optimizer: tfjsOptimizer(config), loss: 'binaryCrossentropy' });
  const history = await dense.fit(xs, ys, { batchSize: BATCH, epochs: EPOCHS, shuffle: false, verbose: 0 });
  const fitLosses = history.history.loss as number[];

  const denseOptimizer = tfjsOptimizer(config);
  const denseVariables = sparse.trainableWeights.map((w) => w.read() as tf.Variable);
  const sparseLosses: number[] = [];
  const rowBytes: number[] = [];
  for (let epoch = 0; epoch < EPOCHS; epoch++) {
    let sum = 0;
    for (let start = 0; start < N; start += BATCH) {
      const batchIds = xs.slice([start, 0], [BATCH, K]);
      const batchLabels = ys.slice([start, 0], [BATCH, 1]);
      const context = await prepareEmbeddings(sparse, batchIds, source, true);
      const step = await embeddingGradients(
        context,
        () => lossOf(batchLabels, sparse.apply(batchIds, { training: true }) as tf.Tensor),
        denseVariables,
      );
      denseOptimizer.applyGradients(step.dense);
      for (const { ids, gradients } of step.rows) table.push(ids, gradients);
      rowBytes.push(context.rowBytesPerStep());
      tf.dispose([batchIds, batchLabels, ...Object.values(step.dense)]);
      context.dispose();
      sum += step.loss;
    }
    sparseLosses.push(sum / (N / BATCH));
  }
  const trainedDenseTable = dense.getLayer('ids').getWeights()[0]!.dataSync() as Float32Array;
  return { fitLosses, sparseLosses, rowBytes, table, trainedDenseTable, allIds };
}

describe('distributed embedding against tfl.layers.embedding + model.fit', () => {
  it('sgd: the same losses and the same table, since untouched rows get no update either way', async () => {
    const run = await trainBothWays({ type: 'sgd', learningRate: 3 });
    expect(run.fitLosses[EPOCHS - 1]!).toBeLessThan(0.8 * run.fitLosses[0]!);
    run.sparseLosses.forEach((loss, epoch) => {
      expect(Math.abs(loss - run.fitLosses[epoch]!)).toBeLessThan(1e-4);
    });
    const trained = run.table.lookup(run.allIds);
    let worst = 0;
    for (let i = 0; i < trained.length; i++)
      worst = Math.max(worst, Math.abs((trained[i] as number) - (run.trainedDenseTable[i] as number)));
    expect(worst).toBeLessThan(1e-4);
  });

  it('adam (lazy on the table): a comparable loss, and bytes per step that follow the unique ids, not the table', async () => {
    const run = await trainBothWays({ type: 'adam', learningRate: 0.05 });
    const [firstFit, lastFit] = [run.fitLosses[0]!, run.fitLosses[EPOCHS - 1]!];
    const lastSparse = run.sparseLosses[EPOCHS - 1]!;
    expect(lastFit).toBeLessThan(0.8 * firstFit);
    expect(lastSparse).toBeLessThan(0.8 * run.sparseLosses[0]!);
    expect(Math.abs(lastSparse - lastFit)).toBeLessThan(0.05);
    // Rows were created only for ids the data used.
    expect(run.table.rowCount).toBe(new Set(xs.dataSync()).size);
    // Bytes of rows per step: unique ids x dim x 4 x 2, against the whole table pulled and pushed.
    const sparseBytes = run.rowBytes.reduce((a, b) => a + b) / run.rowBytes.length;
    const denseBytes = V * DIM * 4 * 2;
    console.log(
      `rows bytes per step: ${sparseBytes.toFixed(0)} sparse vs ${denseBytes} dense (${(denseBytes / sparseBytes).toFixed(1)}x fewer); ` +
        `final loss ${lastSparse.toFixed(4)} sparse vs ${lastFit.toFixed(4)} model.fit`,
    );
    // Each step moved exactly its batch's distinct ids' rows, counted here from the data.
    const ids = xs.dataSync();
    const distinctPerStep: number[] = [];
    for (let epoch = 0; epoch < EPOCHS; epoch++)
      for (let start = 0; start < N; start += BATCH)
        distinctPerStep.push(new Set(ids.subarray(start * K, (start + BATCH) * K)).size);
    expect(run.rowBytes).toEqual(distinctPerStep.map((u) => u * DIM * 4 * 2));
    expect(sparseBytes).toBeLessThan(denseBytes);
  });
});
