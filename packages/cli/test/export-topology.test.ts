/**
 * The model side of `edl export` for distributed embedding layers: each becomes standard layers
 * that plain `tf.loadLayersModel` loads (functional and Sequential models; the sum, mean and sqrtn
 * combiners; two layers sharing one table), and the loaded model predicts what the distributed
 * model predicts from the same rows. The tables here are in memory; ps-export.test.ts reads them
 * from a real job's shard files.
 */
import { SeededRandom } from '@edl/common';
import {
  type EmbeddingRowSource,
  embedding,
  prepareEmbeddings,
  selectBackend,
  tf,
  tfl,
  withEmbeddingContext,
} from '@edl/worker';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DenseTable } from '../src/job/export-tables.js';
import { embeddingsOf, withStandardEmbeddings } from '../src/job/export-topology.js';

const IDS = 4;
const ROWS = 30;

beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
});

function randomTable(name: string, dim: number, random: SeededRandom): DenseTable {
  const values = Float32Array.from({ length: ROWS * dim }, () => random.normal());
  return { name, dim, inputDim: ROWS, values, rowsCreated: ROWS };
}

/** The rows of `tables` as a parameter server would give them. */
function rowSource(tables: readonly DenseTable[]): EmbeddingRowSource {
  return {
    rows: async (name, ids, dim) => {
      const table = tables.find((t) => t.name === name) as DenseTable;
      const out = new Float32Array(ids.length * dim);
      ids.forEach((id, i) => {
        out.set(table.values.subarray(id * dim, (id + 1) * dim), i * dim);
      });
      return out;
    },
  };
}

/** Saves `model`, makes its distributed layers standard, and loads the result with plain tfjs. */
async function exportAndLoad(
  model: tfl.LayersModel,
  tables: readonly DenseTable[],
): Promise<tfl.LayersModel> {
  let artifacts: tf.io.ModelArtifacts | undefined;
  await model.save(
    tf.io.withSaveHandler(async (saved) => {
      artifacts = saved;
      return { modelArtifactsInfo: { dateSaved: new Date(), modelTopologyType: 'JSON' } };
    }),
  );
  const saved = artifacts as tf.io.ModelArtifacts;
  const standard = withStandardEmbeddings(saved, embeddingsOf(model).layers, tables);
  expect(JSON.stringify(standard.topology)).not.toContain('EdlDistributedEmbedding');
  const own = new Uint8Array(tf.io.CompositeArrayBuffer.join(saved.weightData));
  const data = new Uint8Array(own.length + standard.tableData.reduce((n, d) => n + d.length, 0));
  let at = 0;
  for (const part of [own, ...standard.tableData]) {
    data.set(part, at);
    at += part.length;
  }
  return tfl.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: standard.topology as tf.io.ModelJSON['modelTopology'],
      weightSpecs: standard.weightSpecs,
      weightData: data.buffer,
    }),
  );
}

async function expectSamePredictions(
  model: tfl.LayersModel,
  exported: tfl.LayersModel,
  tables: readonly DenseTable[],
  random: SeededRandom,
): Promise<void> {
  const ids = tf.tensor2d(
    Float32Array.from({ length: 16 * IDS }, () => Math.floor(ROWS * random.next())),
    [16, IDS],
  );
  const context = await prepareEmbeddings(model, ids, rowSource(tables), false);
  const expected = withEmbeddingContext(context, () => model.predict(ids) as tf.Tensor).dataSync();
  context.dispose();
  const actual = (exported.predict(ids) as tf.Tensor).dataSync();
  expect(actual.length).toBe(expected.length);
  actual.forEach((value, i) => {
    expect(value).toBeCloseTo(expected[i] as number, 5);
  });
}

describe('standard embedding layers of an exported model', () => {
  it('a Sequential model with a sum combiner: embedding, average pooling, rescaling by the ids', async () => {
    const random = new SeededRandom(1);
    const model = tfl.sequential({
      layers: [
        embedding({ name: 'bag', outputDim: 3, combiner: 'sum', inputShape: [IDS] }),
        tfl.layers.dense({ name: 'out', units: 2 }),
      ],
    });
    const tables = [randomTable('bag', 3, random)];
    const exported = await exportAndLoad(model, tables);
    expect(exported.layers.map((l) => l.getClassName())).toEqual([
      'Embedding',
      'GlobalAveragePooling1D',
      'Rescaling',
      'Dense',
    ]);
    expect(exported.getLayer('bag_rows').getWeights()[0]?.shape).toEqual([ROWS, 3]);
    await expectSamePredictions(model, exported, tables, random);
  });

  it('a functional model whose mean and sqrtn layers share one table and a layer without combiner', async () => {
    const random = new SeededRandom(2);
    const ids = tfl.input({ name: 'ids', shape: [IDS] });
    const mean = embedding({ name: 'mean', table: 'shared', outputDim: 2, combiner: 'mean' }).apply(ids);
    const sqrtn = embedding({ name: 'sqrtn', table: 'shared', outputDim: 2, combiner: 'sqrtn' }).apply(ids);
    const each = tfl.layers
      .flatten({ name: 'each_flat' })
      .apply(embedding({ name: 'each', outputDim: 3 }).apply(ids) as tfl.SymbolicTensor);
    const joined = tfl.layers
      .concatenate({ name: 'joined' })
      .apply([mean, sqrtn, each] as tfl.SymbolicTensor[]) as tfl.SymbolicTensor;
    const out = tfl.layers.dense({ name: 'out', units: 1 }).apply(joined) as tfl.SymbolicTensor;
    const model = tfl.model({ inputs: ids, outputs: out });
    const tables = [randomTable('shared', 2, random), randomTable('each', 3, random)];
    const exported = await exportAndLoad(model, tables);
    expect(exported.getLayer('mean').getClassName()).toBe('GlobalAveragePooling1D');
    expect(exported.getLayer('sqrtn').getClassName()).toBe('Rescaling');
    expect(exported.getLayer('each').getClassName()).toBe('Embedding');
    // Each layer of a shared table has its own copy of it.
    expect(exported.getLayer('mean_rows').getWeights()[0]?.dataSync()).toEqual(tables[0]?.values);
    expect(exported.getLayer('sqrtn_rows').getWeights()[0]?.dataSync()).toEqual(tables[0]?.values);
    await expectSamePredictions(model, exported, tables, random);
  });
});
