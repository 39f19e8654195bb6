import * as tf from '@tensorflow/tfjs-core';
import * as tfl from '@tensorflow/tfjs-layers';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  EmbeddingContext,
  type EmbeddingRowSource,
  embedding,
  embeddingGradients,
  gatherRows,
  prepareEmbeddings,
  selectBackend,
  uniqueIds,
  withEmbeddingContext,
} from '../src/index.js';

beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
});

/** Rows whose every value is `id + j / 10`, so a gathered value says which row it came from. */
const idRows: EmbeddingRowSource = {
  rows: async (_table, ids, dim) =>
    Float32Array.from(
      { length: ids.length * dim },
      (_, k) => (ids[Math.floor(k / dim)] as number) + (k % dim) / 10,
    ),
};

describe('uniqueIds', () => {
  it('gives distinct ids in first-appearance order and each input id index into them', () => {
    const { ids, indices } = uniqueIds(new Int32Array([7, 3, 7, 2 ** 31 - 1, 3, 0]));
    expect(Array.from(ids)).toEqual([7, 3, 2 ** 31 - 1, 0]);
    expect(Array.from(indices)).toEqual([0, 1, 0, 2, 1, 3]);
    const big = uniqueIds([2 ** 53 - 1, 2 ** 53 - 2, 2 ** 53 - 1]);
    expect(Array.from(big.ids)).toEqual([2 ** 53 - 1, 2 ** 53 - 2]);
  });

  it('rejects ids that are not non-negative integers, naming their position', () => {
    expect(() => uniqueIds(new Float32Array([1, 2.5]), 'user ids')).toThrow(
      `Expected a non-negative integer up to ${Number.MAX_SAFE_INTEGER} for user ids[1] but received 2.5`,
    );
    expect(() => uniqueIds([-1])).toThrow(/for ids\[0\] but received -1/);
  });
});

describe('gatherRows', () => {
  it('gradient with respect to the pulled rows is one summed row per unique id', () => {
    const raw = new Int32Array([5, 9, 5, 5, 2, 9]);
    const { ids, indices } = uniqueIds(raw);
    const rows = tf.variable(tf.tensor2d([1, 1, 2, 2, 3, 3], [3, 2]));
    // Weights per position, so each id's gradient is the sum of its positions' weights.
    const weights = tf.tensor3d([1, 10, 2, 20, 3, 30, 4, 40, 5, 50, 6, 60], [2, 3, 2]);
    const { grads } = tf.variableGrads(
      () => tf.sum(tf.mul(gatherRows(rows, indices, [2, 3]), weights)),
      [rows],
    );
    // id 5 at positions 0, 2, 3; id 9 at 1, 5; id 2 at 4.
    expect(Array.from(ids)).toEqual([5, 9, 2]);
    expect(Array.from(grads[rows.name]!.dataSync())).toEqual([
      1 + 3 + 4,
      10 + 30 + 40,
      2 + 6,
      20 + 60,
      5,
      50,
    ]);
    rows.dispose();
  });

  it('combines the last axis by sum, mean or sqrtn', () => {
    const rows = tf.tensor2d([1, 2, 3, 4], [2, 2]);
    const indices = new Int32Array([0, 1, 1, 1]);
    const shape = [2, 2];
    expect(Array.from(gatherRows(rows, indices, shape, 'sum').dataSync())).toEqual([4, 6, 6, 8]);
    expect(Array.from(gatherRows(rows, indices, shape, 'mean').dataSync())).toEqual([2, 3, 3, 4]);
    const sqrtn = gatherRows(rows, indices, shape, 'sqrtn').dataSync();
    [4, 6, 6, 8].forEach((sum, i) => {
      expect(sqrtn[i]).toBeCloseTo(sum / Math.SQRT2, 6);
    });
    expect(gatherRows(rows, indices, shape).shape).toEqual([2, 2, 2]);
    expect(() => gatherRows(rows, new Int32Array([0, 1]), [2], 'mean')).toThrow(/rank 2 or more/);
  });
});

describe('the embedding layer', () => {
  it('gathers the pulled rows in a sequential model, with buckets, and names its table in errors', async () => {
    const model = tfl.sequential({
      layers: [
        embedding({ name: 'item', outputDim: 3, numBuckets: 100, inputShape: [2] }),
        tfl.layers.flatten(),
      ],
    });
    expect(model.outputs[0]!.shape).toEqual([null, 6]);
    const ids = tf.tensor2d([
      [105, 7],
      [7, 250],
    ]);
    const context = await prepareEmbeddings(model, ids, idRows, true);
    expect(context.tables).toEqual(['item']);
    // 105 -> 5, 250 -> 50: three unique rows of 3 floats, pulled and pushed.
    expect(context.rowBytesPerStep()).toBe(3 * 3 * 4 * 2);
    const out = withEmbeddingContext(context, () => model.predict(ids) as tf.Tensor);
    expect(Array.from(out.dataSync())).toEqual(
      [5, 5.1, 5.2, 7, 7.1, 7.2, 7, 7.1, 7.2, 50, 50.1, 50.2].map(Math.fround),
    );
    // Outside a context, and with an id the step did not pull, the layer says why it cannot run.
    expect(() => model.predict(ids)).toThrow(
      /Distributed embedding layer 'item' ran outside an embedding context/,
    );
    expect(() => withEmbeddingContext(context, () => model.predict(tf.tensor2d([[3, 5]])))).toThrow(
      "Embedding layer 'item' met id 3 of table 'item', which this step did not pull",
    );
    context.dispose();
  });

  it('shares a table between layers: one pull of their ids together, one gradient merging both', async () => {
    const user = tfl.input({ shape: [1], name: 'user' });
    const friend = tfl.input({ shape: [1], name: 'friend' });
    const a = embedding({ name: 'user_emb', table: 'people', outputDim: 2, combiner: 'sum' });
    const b = embedding({ name: 'friend_emb', table: 'people', outputDim: 2, combiner: 'sum' });
    const dot = tfl.layers
      .dot({ axes: 1 })
      .apply([
        a.apply(user) as tfl.SymbolicTensor,
        b.apply(friend) as tfl.SymbolicTensor,
      ]) as tfl.SymbolicTensor;
    const model = tfl.model({ inputs: [user, friend], outputs: dot });
    const inputs = [tf.tensor2d([[1], [2]]), tf.tensor2d([[2], [3]])];
    const pulled: Float64Array[] = [];
    const source: EmbeddingRowSource = {
      rows: (table, ids, dim, forTraining) => {
        expect([table, forTraining]).toEqual(['people', true]);
        pulled.push(ids);
        return idRows.rows(table, ids, dim, forTraining);
      },
    };
    const context = await prepareEmbeddings(model, inputs, source, true);
    expect(pulled.map((ids) => Array.from(ids))).toEqual([[1, 2, 3]]);
    const { loss, rows } = await embeddingGradients(
      context,
      () => tf.sum(model.apply(inputs) as tf.Tensor) as tf.Scalar,
      [],
    );
    // loss = r1.r2 + r2.r3; d/dr1 = r2, d/dr2 = r1 + r3, d/dr3 = r2 (r_id = [id, id + 0.1]).
    const r = (id: number) => [id, id + 0.1];
    expect(loss).toBeCloseTo(1 * 2 + 1.1 * 2.1 + 2 * 3 + 2.1 * 3.1, 4);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.table).toBe('people');
    expect(Array.from(rows[0]!.ids)).toEqual([1, 2, 3]);
    const expected = [...r(2), r(1)[0]! + r(3)[0]!, r(1)[1]! + r(3)[1]!, ...r(2)];
    Array.from(rows[0]!.gradients).forEach((g, i) => {
      expect(g).toBeCloseTo(expected[i]!, 5);
    });
    context.dispose();
  });

  it('refuses ids that do not come straight from a model input', () => {
    const input = tfl.input({ shape: [2] });
    const shifted = tfl.layers.dense({ units: 2 }).apply(input) as tfl.SymbolicTensor;
    const layer = embedding({ name: 'late', outputDim: 2 });
    const model = tfl.model({ inputs: input, outputs: layer.apply(shifted) as tfl.SymbolicTensor });
    return expect(prepareEmbeddings(model, tf.zeros([1, 2]), idRows, false)).rejects.toThrow(
      /Distributed embedding layer 'late' takes its ids from .*, not from a model input/,
    );
  });

  it('serializes its config for a saved model topology', () => {
    const layer = embedding({ name: 'e', outputDim: 4, numBuckets: 10, combiner: 'mean', table: 't' });
    expect(layer.getConfig()).toMatchObject({
      name: 'e',
      outputDim: 4,
      numBuckets: 10,
      combiner: 'mean',
      table: 't',
    });
    expect(() => embedding({ name: 'e', outputDim: 0 })).toThrow(/embedding\.outputDim/);
    expect(() => embedding({ name: 'e', outputDim: 2, combiner: 'max' as never })).toThrow(
      /embedding\.combiner/,
    );
    const context = new EmbeddingContext();
    expect(() => context.provide('t', new Float64Array([1]), new Float32Array(3), 2)).toThrow(
      "Expected 1 x 2 = 2 values for the rows of table 't' but received 3",
    );
  });
});
