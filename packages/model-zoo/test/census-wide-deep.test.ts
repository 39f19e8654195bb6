import { EmbeddingTable } from '@edl/ps';
import { selectBackend, tf } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CENSUS_CATEGORY_IDS,
  type CensusRecord,
  censusWideDeepDefinition,
  censusWideDeepTableSpecs,
  type EmbeddingRowStore,
  EmbeddingStepLoop,
  registerLinearSegmentSum,
  rocAuc,
  synthesizeCensusRows,
} from '../src/index.js';
import { minibatchesOf } from './helpers/click-batches.js';

// The census Wide&Deep model's tables in in-process EmbeddingTables (the rows a shard would hold),
// trained through the worker's embedding step functions on the synthetic census rows.
let restoreKernel: (() => void) | undefined;
beforeAll(async () => {
  await selectBackend({ backend: 'cpu' });
  restoreKernel = registerLinearSegmentSum('cpu');
});
afterAll(() => restoreKernel?.());

describe('census Wide&Deep with the distributed embedding', () => {
  it('learns the census income label, with rows only for the category values seen', async () => {
    const definition = censusWideDeepDefinition();
    const tables = new Map<string, EmbeddingTable>(
      censusWideDeepTableSpecs().map((spec) => [spec.name, new EmbeddingTable(spec)]),
    );
    const table = (name: string) => tables.get(name) as EmbeddingTable;
    const store: EmbeddingRowStore = {
      rows: async (name, ids, _dim, forTraining) =>
        forTraining ? table(name).pull(ids) : table(name).lookup(ids),
      push: async (rows) => {
        for (const { table: name, ids, gradients } of rows) table(name).push(ids, gradients);
      },
    };
    const rows: CensusRecord[] = [...synthesizeCensusRows(4000, 3)] as unknown as CensusRecord[];
    const train = await minibatchesOf(definition.datasetFn, rows.slice(0, 3000), 'training', 64);
    const test = await minibatchesOf(definition.datasetFn, rows.slice(3000), 'evaluation', 500);
    const model = definition.model();
    const loop = new EmbeddingStepLoop(model, definition.loss, tf.train.adam(0.01), store);
    const losses: number[] = [];
    for (let epoch = 0; epoch < 3; epoch++) {
      let sum = 0;
      for (const batch of train) sum += await loop.train(batch.features, batch.labels!);
      losses.push(sum / train.length);
    }
    const scores: number[] = [];
    for (const batch of test) scores.push(...(await loop.predict(batch.features)));
    const auc = rocAuc(
      test.flatMap((b) => Array.from(b.labels!.dataSync())),
      scores,
    );
    console.log(
      `census Wide&Deep: test AUC ${auc.toFixed(4)}, losses ${losses.map((l) => l.toFixed(4)).join(', ')}`,
    );
    expect(auc).toBeGreaterThan(0.8);
    expect(losses[2]!).toBeLessThan(losses[0]!);
    // Every value of the three columns appeared; no unknown-value row was needed or made.
    const seen = new Set(
      train.flatMap((b) => Array.from((b.features as Record<string, tf.Tensor>).categories!.dataSync())),
    );
    expect(seen.size).toBe(CENSUS_CATEGORY_IDS - 3);
    for (const t of tables.values()) expect(t.rowCount).toBe(seen.size);
    for (const batch of [...train, ...test]) tf.dispose([batch.labels!, ...Object.values(batch.features)]);
  });
});
