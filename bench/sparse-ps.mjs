#!/usr/bin/env node
/**
 * Sparse embeddings on parameter-server shards against today's dense path (issue 25): the zoo's
 * DeepFM (2 tables, `click_embeddings` x 16 and `click_linear` x 1, 3 categorical and 3 numeric
 * features, hidden [64, 32], Adagrad 0.05) on the synthetic Zipf (s = 1.1) click log, ids over
 * 10^4, 10^5, 10^6 and 10^7 values, tables of as many rows.
 *
 * - Sparse: 2 real `edl ps` shard processes; the worker's step (prepareEmbeddings, the loss and
 *   gradients, the rows pushed through an EmbeddingClient, dense layers by a local Adagrad) is
 *   driven here by `EmbeddingStepLoop` of @edl/model-zoo (the step alone, no master). Rows are
 *   created on first pull; the 10^7 case first pulls ids 0..5x10^6-1 of both tables (a warm-up
 *   pass, so that the shards' memory is real).
 * - Sparse through `edl train --num-ps 2` (EDL_BENCH_TRAIN=1): the zoo's `deepfm` model definition
 *   on a TFRecord click log of the same ids, with a real master, EDL_BENCH_TRAIN_WORKERS workers
 *   and 2 shards, one epoch of (5 + EDL_BENCH_STEPS) minibatches per worker. steps/s is the
 *   workers' steps (from the job's `--stats`) over the longest worker's time, and over the job's
 *   wall time with start-up; bytes per step are the payload of the minibatches' unique ids (the
 *   job's stats count steps and time, not bytes), as the loop counts them; the peak RSS of a
 *   worker and of each shard is sampled from /proc.
 * - Dense (where the table fits, up to EDL_BENCH_DENSE_MAX rows): the same model with
 *   `tfl.layers.embedding`, each step as today's path moves it: the gradients of every variable
 *   encoded as the worker's ReportGradientRequest, applied by Adagrad, every variable encoded back
 *   as the ReportGradientResponse that carries the model, and loaded into the model. In this
 *   process, with no network: the baseline is flattered, not handicapped.
 *
 * Both paths run their embedding gradients (`tf.gather`'s unsorted segment sum) through
 * `registerLinearSegmentSum` of @edl/model-zoo: TensorFlow.js' own CPU kernel does four tensor
 * operations per table row, seconds per step at 10^3 rows and hours at 10^6.
 *
 * Per size: steps/s, bytes pulled and pushed per step (sparse: ids 8 bytes and floats 4 bytes each
 * way, i.e. the payload; dense: the encoded messages, measured), rows created, worker RSS (after the
 * sparse pass; all sparse sizes run before any dense one) and each shard's RSS.
 *
 *   node bench/sparse-ps.mjs
 *   EDL_BENCH_SMALL=1 node bench/sparse-ps.mjs          # 10^4 and 10^5 only, few steps
 *
 * Environment: EDL_BENCH_SIZES (10000,100000,1000000,10000000), EDL_BENCH_STEPS (100 timed steps
 * per sparse size), EDL_BENCH_DENSE_STEPS (10), EDL_BENCH_DENSE_MAX (1000000), EDL_BENCH_BATCH
 * (512), EDL_BENCH_WARMUP_ROWS (5000000, for sizes of 10^7 and more), EDL_BENCH_BACKEND (cpu),
 * EDL_BENCH_SMALL (1: sizes 10^4,10^5, 20 steps, 5 dense steps), EDL_BENCH_TRAIN (1: also through
 * `edl train --num-ps 2`), EDL_BENCH_TRAIN_WORKERS (2).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineLine } from './lib/machine.mjs';

const root = fileURLToPath(new URL('../', import.meta.url));
const edlBin = path.join(root, 'packages/cli/dist/bin/edl.js');
if (!existsSync(edlBin)) throw new Error(`${edlBin} is missing: run 'pnpm build' first`);
const zoo = await import('../packages/model-zoo/dist/index.js');
const { selectBackend, tf } = await import('../packages/worker/dist/index.js');
const { EmbeddingClient, toTensorMessage } = await import('../packages/proto/dist/index.js');
const { encodeReportGradientRequest, encodeReportGradientResponse } = await import(
  '../packages/proto/dist/model-message-codec.js'
);
const { shardOfId } = await import('../packages/ps/dist/index.js');

const small = process.env.EDL_BENCH_SMALL === '1';
const sizes = (process.env.EDL_BENCH_SIZES ?? (small ? '10000,100000' : '10000,100000,1000000,10000000'))
  .split(',')
  .map(Number);
const steps = Number(process.env.EDL_BENCH_STEPS ?? (small ? 20 : 100));
const denseSteps = Number(process.env.EDL_BENCH_DENSE_STEPS ?? (small ? 5 : 10));
const denseMax = Number(process.env.EDL_BENCH_DENSE_MAX ?? 1_000_000);
const batchSize = Number(process.env.EDL_BENCH_BATCH ?? 512);
const warmupRows = Number(process.env.EDL_BENCH_WARMUP_ROWS ?? 5_000_000);
const backend = process.env.EDL_BENCH_BACKEND ?? 'cpu';
const throughTrain = process.env.EDL_BENCH_TRAIN === '1';
const trainWorkers = Number(process.env.EDL_BENCH_TRAIN_WORKERS ?? 2);
const DIM = 16;
const WARM_STEPS = 5;
const TOKEN = 'sparse-ps-bench-token';

await selectBackend({ backend });
zoo.registerLinearSegmentSum(backend);

const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const kib = (bytes) => `${(bytes / 1024).toFixed(1)} KiB`;
/** RSS of a process by pid from /proc (Linux), in bytes; NaN elsewhere. */
function rssOf(pid) {
  try {
    const line = readFileSync(`/proc/${pid}/status`, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('VmRSS:'));
    return Number(line?.split(/\s+/)[1]) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** `count` minibatches of the click log over `vocabulary` ids, as tensors. */
function clickBatches(vocabulary, count) {
  const synthesizer = new zoo.ClickLogSynthesizer({ vocabulary, seed: 1 });
  const { categorical, numeric } = synthesizer;
  return Array.from({ length: count }, () => {
    const b = synthesizer.batch(batchSize);
    return {
      features: {
        ids: tf.tensor2d(b.ids, [batchSize, categorical], 'int32'),
        numeric: tf.tensor2d(b.numeric, [batchSize, numeric]),
      },
      labels: tf.tensor2d(b.clicks, [batchSize, 1]),
    };
  });
}
const disposeBatches = (batches) => {
  for (const b of batches) tf.dispose([b.labels, b.features.ids, b.features.numeric]);
};

async function sparseRun(vocabulary) {
  const batches = clickBatches(vocabulary, WARM_STEPS + steps);
  const tables = zoo.deepFmTableSpecs({ dim: DIM });
  const shards = await zoo.startEdlPsShards({
    edlBin,
    numShards: 2,
    tables,
    token: TOKEN,
    nodeArgs: ['--max-old-space-size=6144'],
  });
  const client = new EmbeddingClient({ addresses: shards.addresses, token: TOKEN, shardOfId });
  try {
    let warmup = '';
    if (vocabulary >= 10_000_000) {
      const started = performance.now();
      const chunk = 65_536;
      for (let first = 0; first < warmupRows; first += chunk) {
        const ids = Float64Array.from({ length: Math.min(chunk, warmupRows - first) }, (_, i) => first + i);
        await Promise.all(tables.map((t) => client.pull(t.name, ids)));
      }
      warmup = `warm-up pulled ${warmupRows} rows of each table in ${((performance.now() - started) / 1000).toFixed(1)} s`;
    }
    const model = zoo.buildDeepFmModel({ dim: DIM });
    const loop = new zoo.EmbeddingStepLoop(
      model,
      zoo.clickLoss,
      tf.train.adagrad(zoo.DEEPFM_OPTIMIZER.learningRate),
      zoo.embeddingClientStore(client, 'bench-worker'),
    );
    for (const b of batches.slice(0, WARM_STEPS)) await loop.train(b.features, b.labels);
    const { pulledBytes, pushedBytes } = { ...loop.traffic };
    const started = performance.now();
    let loss = 0;
    for (const b of batches.slice(WARM_STEPS)) loss = await loop.train(b.features, b.labels);
    const seconds = (performance.now() - started) / 1000;
    const described = await client.describe();
    const rows = described.map(
      (d) => d.tables.find((t) => t.name === zoo.DEEPFM_TABLES.embeddings)?.rows ?? 0,
    );
    return {
      stepsPerSecond: steps / seconds,
      pulled: (loop.traffic.pulledBytes - pulledBytes) / steps,
      pushed: (loop.traffic.pushedBytes - pushedBytes) / steps,
      rows: rows.reduce((a, b) => a + b, 0),
      workerRss: process.memoryUsage().rss,
      psRss: shards.pids.map(rssOf),
      loss,
      warmup,
    };
  } finally {
    client.close();
    await shards.stop();
    disposeBatches(batches);
  }
}

/** The descendants of `pid` (Linux /proc), with their command lines; empty elsewhere. */
function descendantsOf(pid) {
  const found = [];
  const visit = (parent) => {
    let tasks = [];
    try {
      tasks = readdirSync(`/proc/${parent}/task`);
    } catch {
      return;
    }
    for (const task of tasks) {
      let children = '';
      try {
        children = readFileSync(`/proc/${parent}/task/${task}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const child of children.split(' ').filter(Boolean).map(Number)) {
        let cmdline = '';
        try {
          cmdline = readFileSync(`/proc/${child}/cmdline`, 'utf8').split('\0').join(' ');
        } catch {}
        found.push({ pid: child, cmdline });
        visit(child);
      }
    }
  };
  visit(pid);
  return found;
}

/**
 * Runs `edl train` with `args`; resolves once it exits 0 to its stdout, the wall seconds it took
 * and the peak RSS of its workers and of its `edl ps` shards, sampled every half second.
 */
function edlTrain(args) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(process.execPath, [edlBin, 'train', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const peak = { worker: 0, ps: new Map() };
    const sampler = setInterval(() => {
      for (const { pid, cmdline } of descendantsOf(child.pid)) {
        if (/ ps --shard-index (\d+)/.test(cmdline)) {
          const shard = Number(/ ps --shard-index (\d+)/.exec(cmdline)[1]);
          peak.ps.set(shard, Math.max(peak.ps.get(shard) ?? 0, rssOf(pid) || 0));
        } else if (/ worker( |$)/.test(cmdline)) peak.worker = Math.max(peak.worker, rssOf(pid) || 0);
      }
    }, 500);
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr = (stderr + d).slice(-4000);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      clearInterval(sampler);
      const psRss = [...peak.ps].sort((a, b) => a[0] - b[0]).map(([, rss]) => rss);
      if (code === 0)
        resolve({ stdout, seconds: (performance.now() - started) / 1000, workerRss: peak.worker, psRss });
      else reject(new Error(`edl train exited ${code}: ${stderr}`));
    });
  });
}

/**
 * The same DeepFM through `edl train --num-ps 2`: a click log of `records` examples over
 * `vocabulary` ids (one TFRecord file), the zoo's `deepfm` definition, one epoch. Bytes per step
 * are those of the loop's count (ids 8 bytes, floats 4 bytes, each way) for each minibatch's
 * unique ids, from the same synthetic stream the file holds.
 */
async function trainRun(vocabulary) {
  const dir = mkdtempSync(path.join(tmpdir(), 'edl-sparse-ps-'));
  try {
    const records = trainWorkers * (WARM_STEPS + steps) * batchSize;
    const files = await zoo.generateClickLog({ dir, records, files: 1, vocabulary, seed: 1 });
    const { stdout, seconds, workerRss, psRss } = await edlTrain([
      '--model-def',
      'deepfm',
      '--training-data',
      files.files[0].path,
      '--num-ps',
      '2',
      '--num-workers',
      String(trainWorkers),
      '--minibatch-size',
      String(batchSize),
      '--num-epochs',
      '1',
      '--backend',
      backend,
      '--stats',
      '--quiet',
    ]);
    const line = stdout.split('\n').find((l) => l.startsWith('{"state"'));
    if (line === undefined) throw new Error(`edl train printed no --stats summary: ${stdout.slice(-2000)}`);
    const summary = JSON.parse(line);
    const jobSteps = summary.workers.reduce((sum, w) => sum + w.steps, 0);
    const workerSeconds = Math.max(...summary.workers.map((w) => w.timers.totalSeconds));
    const tables = zoo.deepFmTableSpecs({ dim: DIM });
    const synthesizer = new zoo.ClickLogSynthesizer({ vocabulary, seed: 1 });
    let bytes = 0;
    let minibatches = 0;
    for (let done = 0; done < records; done += batchSize, minibatches++) {
      const unique = new Set(synthesizer.batch(Math.min(batchSize, records - done)).ids).size;
      for (const t of tables) bytes += 2 * unique * (8 + 4 * t.dim);
    }
    return {
      steps: jobSteps,
      stepsPerSecond: jobSteps / workerSeconds,
      wallStepsPerSecond: jobSteps / seconds,
      bytesPerStep: bytes / minibatches,
      state: summary.state,
      workerRss,
      psRss,
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** One dense step as today's path moves it: every gradient up, every variable back. */
async function denseRun(vocabulary) {
  const batches = clickBatches(vocabulary, 1 + denseSteps);
  const model = zoo.buildDeepFmModel({ embeddings: 'dense', vocabulary, dim: DIM });
  const variables = model.trainableWeights.map((w) => w.read());
  const optimizer = tf.train.adagrad(zoo.DEEPFM_OPTIMIZER.learningRate);
  let up = 0;
  let down = 0;
  const step = async (b) => {
    const inputs = [b.features.ids, b.features.numeric];
    const { value, grads } = tf.variableGrads(
      () => zoo.clickLoss(b.labels, model.apply(inputs, { training: true })),
      variables,
    );
    const gradients = [];
    for (const v of variables)
      gradients.push(toTensorMessage({ name: v.name, shape: v.shape, values: await grads[v.name].data() }));
    up = encodeReportGradientRequest({
      workerId: 'bench-worker',
      taskId: 1n,
      rangeStart: 0n,
      rangeEnd: BigInt(batchSize),
      modelVersion: 1n,
      gradients,
      moreRanges: [],
      wantModel: true,
      mirror: false,
      wantUpdate: false,
    }).length;
    optimizer.applyGradients(grads);
    const messages = [];
    for (const v of variables)
      messages.push(toTensorMessage({ name: v.name, shape: v.shape, values: await v.data() }));
    const response = encodeReportGradientResponse({
      status: 0,
      modelVersion: 2n,
      taskProgress: 0n,
      variables: messages,
      hasModel: true,
      mirrored: false,
      modelChecksum: 0,
      updateVersion: 0n,
      updateGradients: 0n,
      updateLrDivisor: 0n,
    });
    down = response.length;
    // The worker loads the model it got back.
    variables.forEach((v, i) => {
      const data = messages[i].data;
      v.assign(
        tf.tensor(
          new Float32Array(data.buffer.slice(data.byteOffset, data.byteOffset + data.length)),
          v.shape,
        ),
      );
    });
    const loss = (await value.data())[0];
    tf.dispose([value, ...Object.values(grads)]);
    return loss;
  };
  await step(batches[0]);
  const started = performance.now();
  let loss = 0;
  for (const b of batches.slice(1)) loss = await step(b);
  const seconds = (performance.now() - started) / 1000;
  disposeBatches(batches);
  model.dispose();
  return { stepsPerSecond: denseSteps / seconds, pulled: down, pushed: up, loss };
}

console.log(`sparse-ps: ${machineLine()}; backend ${backend}`);
console.log(
  `DeepFM, minibatch ${batchSize}, tables: ids x ${DIM} (+ ids x 1), Adagrad; sparse: 2 edl ps shards, ` +
    `the step loop driven by EmbeddingStepLoop${throughTrain ? `, and edl train --num-ps 2 with ${trainWorkers} workers` : ''}; ${steps} timed steps sparse, ${denseSteps} dense`,
);
console.log(
  'Goals (issue 25): >= 50x fewer bytes per step than the dense path at 10^6 rows; >= 10x its steps/s at 10^6 rows; ' +
    '10^7 x 16 trains with 2 shards and the worker RSS does not grow with the table.',
);
const results = new Map();
for (const vocabulary of sizes) {
  const sparse = await sparseRun(vocabulary);
  results.set(vocabulary, { sparse });
  console.log(
    `sparse ${vocabulary.toExponential(0)} ids: ${sparse.stepsPerSecond.toFixed(2)} steps/s, ` +
      `${kib(sparse.pulled)} pulled + ${kib(sparse.pushed)} pushed per step, ${sparse.rows} rows created, ` +
      `worker RSS ${mib(sparse.workerRss)}, PS RSS ${sparse.psRss.map(mib).join(' + ')}, loss ${sparse.loss.toFixed(4)}` +
      (sparse.warmup ? `; ${sparse.warmup}` : ''),
  );
  if (!throughTrain) continue;
  const train = await trainRun(vocabulary);
  console.log(
    `edl train --num-ps 2 ${vocabulary.toExponential(0)} ids: ${train.stepsPerSecond.toFixed(2)} steps/s ` +
      `(${train.steps} steps over the longest worker's time; ${train.wallStepsPerSecond.toFixed(2)} over the job's wall time with start-up), ` +
      `${kib(train.bytesPerStep)} per step pulled + pushed, peak RSS of a worker ${mib(train.workerRss)}, ` +
      `of the shards ${train.psRss.map(mib).join(' + ') || 'n/a'}, job ${train.state}`,
  );
}
for (const vocabulary of sizes) {
  if (vocabulary > denseMax) {
    console.log(`dense ${vocabulary.toExponential(0)} ids: skipped (over EDL_BENCH_DENSE_MAX ${denseMax})`);
    continue;
  }
  const dense = await denseRun(vocabulary);
  results.get(vocabulary).dense = dense;
  const { sparse } = results.get(vocabulary);
  const bytesRatio = (dense.pulled + dense.pushed) / (sparse.pulled + sparse.pushed);
  const speedRatio = sparse.stepsPerSecond / dense.stepsPerSecond;
  console.log(
    `dense  ${vocabulary.toExponential(0)} ids: ${dense.stepsPerSecond.toFixed(2)} steps/s, ` +
      `${kib(dense.pulled)} pulled + ${kib(dense.pushed)} pushed per step, loss ${dense.loss.toFixed(4)}; ` +
      `sparse/dense: ${bytesRatio.toFixed(1)}x fewer bytes, ${speedRatio.toFixed(1)}x steps/s`,
  );
}
const rssBySize = [...results].map(([v, r]) => `${v.toExponential(0)}: ${mib(r.sparse.workerRss)}`);
console.log(`worker RSS after each sparse size (must not grow with the table): ${rssBySize.join(', ')}`);
