import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DistributedEmbedding, loadModelDefinition, selectBackend, tf } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CENSUS_CATEGORY_IDS,
  CENSUS_COLUMNS,
  type CensusRecord,
  DEEPFM_TABLES,
  generateClickLog,
  isZooModel,
  registerLinearSegmentSum,
  synthesizeCensusRows,
  zooModelPath,
} from '../src/index.js';
import { minibatchesOf, readTfRecords } from './helpers/click-batches.js';

let dir: string;
let restoreKernel: (() => void) | undefined;
beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
  restoreKernel = registerLinearSegmentSum('cpu');
  dir = await mkdtemp(path.join(tmpdir(), 'edl-zoo-embedding-models-'));
});
afterAll(async () => {
  restoreKernel?.();
  await rm(dir, { recursive: true, force: true });
});

describe('the zoo modules of the embedding models', () => {
  it('deepfm and deepfm-dense load by name; their datasetFn parses the click Examples for their inputs', async () => {
    expect(['deepfm', 'deepfm-dense', 'census-wide-deep'].every(isZooModel)).toBe(true);
    const log = await generateClickLog({ dir, records: 300, files: 1, seed: 4, vocabulary: 10_000 });
    const records = await readTfRecords(log.files.map((f) => f.path));

    const distributed = await loadModelDefinition<Uint8Array>(zooModelPath('deepfm'));
    const model = distributed.model();
    expect(model.inputNames).toEqual(['ids', 'numeric']);
    // By class name: the module loads through the worker's loader, which may bind another copy of the class.
    const tables = model.layers
      .filter((l) => l.getClassName() === DistributedEmbedding.className)
      .map((l) => (l as unknown as { table: string }).table);
    expect(tables.sort()).toEqual([DEEPFM_TABLES.embeddings, DEEPFM_TABLES.linear].sort());
    // No table among the weights: the rows live on the parameter servers.
    expect(model.trainableWeights.some((w) => w.shape[0] === 10_000)).toBe(false);

    const dense = await loadModelDefinition<Uint8Array>(zooModelPath('deepfm-dense'));
    const denseModel = dense.model();
    expect(denseModel.getLayer(DEEPFM_TABLES.embeddings).getWeights()[0]?.shape).toEqual([10_000, 16]);
    const batches = await minibatchesOf(dense.datasetFn, records, 'training', 128);
    expect(batches.map((b) => b.labels?.shape)).toEqual([
      [128, 1],
      [128, 1],
      [44, 1],
    ]);
    const optimizer = tf.train.adagrad(0.05);
    const losses: number[] = [];
    for (let epoch = 0; epoch < 5; epoch++)
      for (const { features, labels } of batches) {
        const named = features as Record<string, tf.Tensor>;
        const loss = optimizer.minimize(
          () => dense.loss(labels!, denseModel.apply([named.ids!, named.numeric!]) as tf.Tensor),
          true,
        );
        losses.push((await loss!.data())[0]!);
        loss!.dispose();
      }
    expect(losses[losses.length - 1]!).toBeLessThan(losses[0]!);
    const predictions = await minibatchesOf(dense.datasetFn, records, 'prediction', 300);
    expect(predictions[0]?.labels).toBeUndefined();
    for (const b of [...batches, ...predictions])
      tf.dispose([b.labels!, ...Object.values(b.features)].filter(Boolean));
  });

  it('census-wide-deep loads by name and reads CSV fields as the census model does', async () => {
    const definition = await loadModelDefinition<CensusRecord>(zooModelPath('census-wide-deep'));
    const model = definition.model();
    expect(model.inputNames).toEqual(['categories', 'numeric']);
    const rows = [...synthesizeCensusRows(10, 2)];
    // CSV records: the fields as strings in the schema's column order (no header metadata).
    const fields = rows.map((r) => CENSUS_COLUMNS.map((c) => String(r[c as keyof typeof r])));
    const [fromCsv] = await minibatchesOf(definition.datasetFn, fields, 'training', 10);
    const [fromRows] = await minibatchesOf(
      definition.datasetFn,
      rows as unknown as CensusRecord[],
      'training',
      10,
    );
    const csv = fromCsv!.features as Record<string, tf.Tensor>;
    const table = fromRows!.features as Record<string, tf.Tensor>;
    expect(csv.categories!.shape).toEqual([10, 3]);
    expect(Array.from(csv.categories!.dataSync())).toEqual(Array.from(table.categories!.dataSync()));
    expect(Array.from(csv.numeric!.dataSync())).toEqual(Array.from(table.numeric!.dataSync()));
    expect(Array.from(fromCsv!.labels!.dataSync())).toEqual(rows.map((r) => r.income_over_50k));
    // Each column's values take ids of their own: the three columns never share one.
    const ids = csv.categories!.dataSync();
    for (let c = 0; c < 3; c++)
      for (let other = c + 1; other < 3; other++)
        for (let i = 0; i < 10; i++)
          for (let k = 0; k < 10; k++) expect(ids[i * 3 + c]).not.toBe(ids[k * 3 + other]);
    expect(Math.max(...ids)).toBeLessThan(CENSUS_CATEGORY_IDS);
  });
});
