/**
 * `edl export` of a model trained with `edl train --num-ps 2`: its distributed embedding tables
 * are read from the checkpoint's shard files and written as the `embeddings` weights of standard
 * TensorFlow.js layers, so that plain `tf.loadLayersModel` loads the model and predicts what the
 * distributed model predicts with its rows on the shards. Needs `pnpm build`.
 */
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SeededRandom } from '@edl/common';
import { findCheckpoint } from '@edl/master';
import {
  decodeDensePart,
  decodeEmbeddingTable,
  EmbeddingShard,
  readShardMarkers,
  restoreShardCheckpoint,
  shardCheckpointDirName,
} from '@edl/ps';
import { TFRecordWriter } from '@edl/recordio';
import { prepareEmbeddings, selectBackend, tf, tfl, withEmbeddingContext } from '@edl/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { model as distributedModel, WIDE_BUCKETS } from './fixtures/export-click-model.js';
import { DENSE_FEATURES, encodeClick, IDS_PER_EXAMPLE } from './fixtures/sparse-click-model.js';
import { EDL_BIN, runEdl } from './helpers/run-edl.js';

const MODEL_DEF = fileURLToPath(new URL('./fixtures/export-click-model.ts', import.meta.url));
/** Ids seen in training lie below this; the checks also ask for ids no example had. */
const TRAINED_IDS = 200;
let dir: string;
let checkpointDir: string;

beforeAll(async () => {
  if (!existsSync(EDL_BIN)) throw new Error(`${EDL_BIN} is missing: run 'pnpm build' first`);
  await selectBackend({ backend: 'cpu' });
  dir = await mkdtemp(path.join(tmpdir(), 'edl-ps-export-'));
  checkpointDir = path.join(dir, 'ckpt');
  const random = new SeededRandom(3);
  const writer = TFRecordWriter.create(path.join(dir, 'train.tfrecord'));
  for (let i = 0; i < 400; i++) {
    const ids = Array.from({ length: IDS_PER_EXAMPLE }, () => Math.floor(TRAINED_IDS * random.next() ** 2));
    const x = [random.normal(), random.normal()];
    writer.write(encodeClick(ids, x, (ids[0] as number) % 3 === 0 ? 1 : 0));
  }
  await writer.close();
  const run = await runEdl([
    'train',
    '--model-def',
    MODEL_DEF,
    '--training-data',
    path.join(dir, 'train.tfrecord'),
    '--checkpoint-dir',
    checkpointDir,
    '--backend',
    'cpu',
    '--num-workers',
    '1',
    '--num-ps',
    '2',
    '--minibatch-size',
    '20',
    '--num-epochs',
    '2',
    // The schedule's steps left out: the shards take the job's updates, counted before they start.
    '--learning-rate-decay',
    'cosine',
  ]);
  expect(run.code, run.stderr.slice(-3000)).toBe(0);
}, 240_000);
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** `edl export` of the job's checkpoint to `out`. */
function exportTo(out: string, ...extra: string[]) {
  return runEdl([
    'export',
    '--model-checkpoint',
    checkpointDir,
    '--model-def',
    MODEL_DEF,
    '--output',
    out,
    ...extra,
  ]);
}

/** Plain TensorFlow.js: model.json and weights.bin, no elasticdl-ts class in between. */
async function loadExported(out: string): Promise<tfl.LayersModel> {
  const json = JSON.parse(await readFile(path.join(out, 'model.json'), 'utf8')) as tf.io.ModelJSON;
  const weights = await readFile(path.join(out, 'weights.bin'));
  return tfl.loadLayersModel(
    tf.io.fromMemory({
      modelTopology: json.modelTopology,
      weightSpecs: json.weightsManifest.flatMap((group) => group.weights),
      weightData: weights.buffer.slice(weights.byteOffset, weights.byteOffset + weights.byteLength),
    }),
  );
}

/** The trained model as the job ran it: dense weights from the checkpoint, rows from a shard. */
async function distributedPredictions(ids: tf.Tensor, x: tf.Tensor): Promise<Float32Array> {
  const found = await findCheckpoint(checkpointDir);
  if (found === undefined) throw new Error(`no checkpoint in ${checkpointDir}`);
  const model = distributedModel();
  const { version } = found.checkpoint.store;
  // Dense variables on the shards (the default of --num-ps): each shard's dense part holds its own.
  const denseParts = readShardMarkers(checkpointDir, version).flatMap((marker) => {
    if (marker.dense === undefined) return [];
    const file = path.join(checkpointDir, shardCheckpointDirName(version), marker.dense.file);
    return decodeDensePart(readFileSync(file), file).variables;
  });
  const byName = new Map(
    (denseParts.length > 0 ? denseParts : found.checkpoint.store.variables).map((v) => [v.name, v]),
  );
  for (const weight of model.trainableWeights) {
    const saved = byName.get(weight.originalName);
    if (saved === undefined) throw new Error(`the checkpoint has no ${weight.originalName}`);
    weight.write(tf.tensor(saved.values, [...saved.shape]));
  }
  // One shard holds every row: the checkpoint's two shards' files re-shard onto it.
  const shard = new EmbeddingShard(0, 1, [], { optimizer: { type: 'adagrad' }, seed: 0 });
  restoreShardCheckpoint(shard, checkpointDir, found.checkpoint.store.version);
  const source = {
    rows: async (table: string, tableIds: Float64Array) => shard.pull(table, tableIds, false),
  };
  const context = await prepareEmbeddings(model, [ids, x], source, false);
  try {
    const output = withEmbeddingContext(context, () => model.predict([ids, x]) as tf.Tensor);
    return (await output.data()) as Float32Array;
  } finally {
    context.dispose();
  }
}

describe('edl train --num-ps 2 --learning-rate-decay cosine', () => {
  it("gives the shards' tables the master's optimizer with the same schedule over the job's updates", async () => {
    const found = await findCheckpoint(checkpointDir);
    if (found === undefined) throw new Error(`no checkpoint in ${checkpointDir}`);
    const { version } = found.checkpoint.store;
    const decay = (found.checkpoint.optimizer as { decay?: { steps: number } }).decay;
    // 400 records in minibatches of 20, for 2 epochs.
    expect(decay).toEqual({ type: 'cosine', steps: 40, alpha: 0 });
    const markers = readShardMarkers(checkpointDir, version);
    expect(markers).toHaveLength(2);
    for (const marker of markers)
      for (const entry of marker.tables) {
        const file = path.join(checkpointDir, shardCheckpointDirName(version), entry.file);
        const table = decodeEmbeddingTable(new Uint8Array(await readFile(file)), file);
        expect(table.optimizer.config).toEqual(found.checkpoint.optimizer);
      }
  });
});

describe('edl export of a model with distributed embedding tables', () => {
  it('writes standard embedding layers that plain tf.loadLayersModel loads, predicting as the shards do', async () => {
    const out = path.join(dir, 'exported');
    const run = await exportTo(out);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`embedding table 'wide': ${WIDE_BUCKETS} x 1`);
    const json = await readFile(path.join(out, 'model.json'), 'utf8');
    expect(json).not.toContain('EdlDistributedEmbedding');
    const exported = await loadExported(out);
    const item = exported.getLayer('item');
    expect(item.getClassName()).toBe('Embedding');
    // Unhashed: the largest trained id + 1 rows; hashed: the bucket count.
    const itemRows = item.getWeights()[0]?.shape[0] as number;
    expect(itemRows).toBeGreaterThan(TRAINED_IDS / 2);
    expect(itemRows).toBeLessThanOrEqual(TRAINED_IDS);
    expect(exported.getLayer('wide_rows').getWeights()[0]?.shape).toEqual([WIDE_BUCKETS, 1]);

    // Ids seen in training, and ids below the item table's size no example had (initializer rows).
    const random = new SeededRandom(9);
    const n = 64;
    const ids = tf.tensor2d(
      Float32Array.from({ length: n * IDS_PER_EXAMPLE }, () => Math.floor(itemRows * random.next())),
      [n, IDS_PER_EXAMPLE],
    );
    const x = tf.tensor2d(
      Float32Array.from({ length: n * DENSE_FEATURES }, () => random.normal()),
      [n, DENSE_FEATURES],
    );
    const expected = await distributedPredictions(ids, x);
    const actual = (await (exported.predict([ids, x]) as tf.Tensor).data()) as Float32Array;
    expect(actual.length).toBe(n);
    for (let i = 0; i < n; i++) expect(actual[i]).toBeCloseTo(expected[i] as number, 5);
    // The model learnt something: its predictions differ between examples.
    expect(Math.max(...expected) - Math.min(...expected)).toBeGreaterThan(0.01);
  }, 120_000);

  it('refuses a table above --max-table-bytes, naming it, its rows and dim and the limit', async () => {
    const run = await exportTo(path.join(dir, 'too-small'), '--max-table-bytes', '1000');
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /Embedding table 'item' does not fit in memory for export: \d+ rows \(its largest id \d+ \+ 1; \d+ created\) x 4 floats = \d+ bytes, above the limit of 1000 bytes\. Raise the limit with --max-table-bytes/,
    );
    expect(existsSync(path.join(dir, 'too-small', 'model.json'))).toBe(false);
  }, 120_000);
});
