import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { EmbeddingClient } from '@edl/proto';
import { EmbeddingTable, shardOfId } from '@edl/ps';
import { type Minibatch, selectBackend, tf } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  buildDeepFmModel,
  clickLogDatasetFn,
  clickLoss,
  DEEPFM_OPTIMIZER,
  deepFmTableSpecs,
  type EdlPsShards,
  EmbeddingStepLoop,
  embeddingClientStore,
  generateClickLog,
  registerLinearSegmentSum,
  rocAuc,
  startEdlPsShards,
} from '../src/index.js';
import { minibatchesOf, readTfRecords } from './helpers/click-batches.js';

// DeepFM on a click log small enough for a dense table: the distributed embedding layer with its
// rows on two real `edl ps` shard processes (the built cli dist), driven through an
// EmbeddingClient by the worker's step functions, against the same model with
// tfl.layers.embedding and model.fit. Same data, same order, same epochs, same optimizer (Adagrad,
// whose sparse update of a row is the dense one's), same starting weights. Real processes: their
// start-up (about a second) is small beside the training.
const EDL_BIN = fileURLToPath(new URL('../../cli/dist/bin/edl.js', import.meta.url));
const TOKEN = 'deepfm-auc-test-token';
const VOCABULARY = 1000;
const DIM = 16;
const TRAIN = 4096;
const TEST = 2048;
const BATCH = 128;
const EPOCHS = 3;

let dir: string;
let shards: EdlPsShards | undefined;
let client: EmbeddingClient | undefined;
let train: Minibatch[];
let test: Minibatch[];
let restoreKernel: (() => void) | undefined;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  await selectBackend({ backend: 'cpu' });
  // Both paths' embedding gradients through the one-pass segment sum (see registerLinearSegmentSum).
  restoreKernel = registerLinearSegmentSum('cpu');
  dir = await mkdtemp(path.join(tmpdir(), 'edl-zoo-deepfm-'));
  const log = await generateClickLog({
    dir,
    records: TRAIN + TEST,
    files: 1,
    seed: 21,
    vocabulary: VOCABULARY,
  });
  const records = await readTfRecords(log.files.map((f) => f.path));
  train = await minibatchesOf(clickLogDatasetFn(), records.slice(0, TRAIN), 'training', BATCH);
  test = await minibatchesOf(clickLogDatasetFn(), records.slice(TRAIN), 'evaluation', 512);
  shards = await startEdlPsShards({
    edlBin: EDL_BIN,
    numShards: 2,
    tables: deepFmTableSpecs({ dim: DIM }),
    token: TOKEN,
  });
  client = new EmbeddingClient({ addresses: shards.addresses, token: TOKEN, shardOfId });
}, 60_000);

afterAll(async () => {
  restoreKernel?.();
  client?.close();
  await shards?.stop();
  for (const batch of [...(train ?? []), ...(test ?? [])])
    tf.dispose([batch.labels, ...Object.values(batch.features)]);
  await rm(dir, { recursive: true, force: true });
});

const named = (batch: Minibatch) => batch.features as Record<string, tf.Tensor>;
const labelsOf = (batches: Minibatch[]) => batches.flatMap((b) => Array.from(b.labels!.dataSync()));

describe('DeepFM: distributed embedding on edl ps shards against tfl.layers.embedding + model.fit', () => {
  it('reaches the same test AUC within 0.01, creating rows only for the ids it trained on', async () => {
    const sparse = buildDeepFmModel({ dim: DIM });
    const dense = buildDeepFmModel({ embeddings: 'dense', vocabulary: VOCABULARY, dim: DIM });
    // The same start: the dense tables hold what the shards' rows start at (a function of the
    // seed, the table and the id), and the deep layers the same weights.
    const allIds = Float64Array.from({ length: VOCABULARY }, (_, i) => i);
    for (const spec of deepFmTableSpecs({ dim: DIM })) {
      const initial = new EmbeddingTable(spec).lookup(allIds);
      dense.getLayer(spec.name).setWeights([tf.tensor2d(initial, [VOCABULARY, spec.dim])]);
    }
    for (const name of ['deep_0', 'deep_1', 'deep_out'])
      dense.getLayer(name).setWeights(sparse.getLayer(name).getWeights());

    const concat = (key: string) => tf.concat(train.map((b) => named(b)[key]!));
    const [ids, numeric, labels] = [concat('ids'), concat('numeric'), tf.concat(train.map((b) => b.labels!))];
    dense.compile({ optimizer: tf.train.adagrad(DEEPFM_OPTIMIZER.learningRate), loss: clickLoss });
    const history = await dense.fit([ids, numeric], labels, {
      batchSize: BATCH,
      epochs: EPOCHS,
      shuffle: false,
      verbose: 0,
    });
    tf.dispose([ids, numeric, labels]);

    const loop = new EmbeddingStepLoop(
      sparse,
      clickLoss,
      tf.train.adagrad(DEEPFM_OPTIMIZER.learningRate),
      embeddingClientStore(client!, 'worker-0'),
    );
    const sparseLosses: number[] = [];
    for (let epoch = 0; epoch < EPOCHS; epoch++) {
      let sum = 0;
      for (const batch of train) sum += await loop.train(batch.features, batch.labels!);
      sparseLosses.push(sum / train.length);
    }

    const rowsAfterTraining = (await client!.describe()).flatMap((d) =>
      d.tables.map((t) => [t.name, t.rows] as const),
    );
    const denseScores: number[] = [];
    const sparseScores: number[] = [];
    for (const batch of test) {
      const out = dense.predict([named(batch).ids!, named(batch).numeric!]) as tf.Tensor;
      denseScores.push(...out.dataSync());
      out.dispose();
      sparseScores.push(...(await loop.predict(batch.features)));
    }
    const truth = labelsOf(test);
    const denseAuc = rocAuc(truth, denseScores);
    const sparseAuc = rocAuc(truth, sparseScores);
    const fitLosses = history.history.loss as number[];
    console.log(
      `DeepFM test AUC: ${sparseAuc.toFixed(4)} distributed (2 edl ps shards) vs ${denseAuc.toFixed(4)} model.fit; ` +
        `last epoch loss ${sparseLosses[EPOCHS - 1]!.toFixed(4)} vs ${fitLosses[EPOCHS - 1]!.toFixed(4)}`,
    );
    // Both learned the planted model, and to the same AUC.
    expect(denseAuc).toBeGreaterThan(0.65);
    expect(Math.abs(sparseAuc - denseAuc)).toBeLessThan(0.01);
    expect(sparseLosses[EPOCHS - 1]!).toBeLessThan(sparseLosses[0]!);

    // Rows exist for exactly the ids training used, spread over both shards; evaluation created none.
    const trained = new Set(train.flatMap((b) => Array.from(named(b).ids!.dataSync())));
    const rowsOf = (rows: (readonly [string, number])[], table: string) =>
      rows.filter(([name]) => name === table).map(([, n]) => n);
    const after = (await client!.describe()).flatMap((d) => d.tables.map((t) => [t.name, t.rows] as const));
    for (const spec of deepFmTableSpecs()) {
      const perShard = rowsOf(after, spec.name);
      expect(perShard.every((n) => n > 0)).toBe(true);
      expect(perShard.reduce((a, b) => a + b)).toBe(trained.size);
    }
    expect(after).toEqual(rowsAfterTraining);
    // Each step moved its unique ids' rows, not the tables: far fewer bytes than the dense path.
    const denseBytesPerStep = 2 * VOCABULARY * (DIM + 1) * 4;
    const sparseBytesPerStep = (loop.traffic.pulledBytes + loop.traffic.pushedBytes) / loop.steps;
    expect(sparseBytesPerStep).toBeLessThan(denseBytesPerStep);
  }, 120_000);
});
