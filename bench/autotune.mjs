#!/usr/bin/env node
/**
 * Autotuning (issue 26 §4-5): three pipelines, each run with every point of a grid over the
 * hand-set parameters and then with 'auto', in one run; prints auto's throughput as a ratio of the
 * best grid point (medians of EDL_BENCH_REPEAT runs, default 3), its peak RSS against the RAM
 * budget, the epoch length, and when the tuner last changed a setting (as a share of the epoch).
 * Goals: auto >= 0.95x the best grid point, never over budget, converged within the first 5%.
 *
 * - cheap: a cheap map over RecordIO (~100-byte text records: their byte sum), inline, batched by
 *   256, then `prefetch(P)`; the consumer spends 1 ms per batch. Epoch 150,000 records. Grid: P in
 *   1, 4, 16 (the earlier grid's 2 and 8 were never best nor worst).
 * - expensive: a CPU-bound map (EDL_BENCH_SPIN_MS of busy work per element, default 1) by
 *   `mapParallel({ workers: W, bufferSize: B })`, then `prefetch(P)`. Epoch 5,000 elements. Grid:
 *   W in 1, cores; (B, P) in (2W, 2), (8W, 8).
 * - delayed: records read from a local RecordIO file with an injected delay per 64-record chunk
 *   (1 ms, and 40 ms for one chunk in 16: a slow request's tail, as a remote read sees), mapped
 *   inline, batched by 64, then `prefetch(P)`; the consumer spends 6 ms per batch. Epoch 40,000
 *   records. Grid: P in 1, 4, 16.
 *
 * - remote: image-like records (~3 KiB) read from S3 by `RecordIODataSource` (npm's s3rver, started
 *   here, behind the remote-read benchmark's proxy adding EDL_BENCH_LATENCY_MS per request, default
 *   50: one ranged GET per 1 MiB chunk), mapped inline, batched by 64, then `prefetch(P)`; the
 *   consumer spends 6 ms per batch. Epoch 20,000 records. Grid: P in 1, 4, 16. This is the issue's
 *   third pipeline; `delayed` is its stand-in without a server, kept for comparison.
 *
 * Sized so that the three pipelines, 3 runs of each configuration, fit well within 8 minutes on an
 * idle 2-core machine: about 3 by the epochs' expected times (not yet timed at full scale).
 *
 * Every run is its own process (`--run <json>`), so its peak RSS (`maxRSS`) is its own; the RSS
 * before the pipeline starts is reported beside it (Node.js itself, the module graph), and the
 * budget bounds what the tuned stages hold on top. Runs go round-robin over the configurations.
 *
 * Environment: EDL_BENCH_SCALE (every epoch times this, default 1; 0.1 for a small run),
 * EDL_BENCH_REPEAT (runs per configuration, median kept, default 3), EDL_BENCH_BUDGET (RAM budget
 * in bytes, default 256 MiB), EDL_BENCH_SPIN_MS (default 1), EDL_BENCH_PIPELINES (default
 * "cheap,expensive,remote,delayed"), EDL_BENCH_LATENCY_MS (default 50).
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { autotuneSnapshot, configureAutotune } from '@edl/data/autotune';
import { IterDataset, MapDataset, RecordIODataSource } from '@edl/data/dataset';
import { buildLocalSidecarIndex, encodeSidecarIndex } from '@edl/recordio';
import { machineLine } from './lib/machine.mjs';
import { inputFile, median, spin } from './lib/prefetch-input.mjs';
import { loadS3Client, S3RVER_ENV, s3Client, startDelayProxy, startS3rver } from './lib/s3-bench-server.mjs';

const FNS = new URL('../packages/data/test/dataset/fixtures/autotune-fns.mjs', import.meta.url);
const scale = Number(process.env.EDL_BENCH_SCALE ?? 1);
/** Epoch lengths at scale 1: records of the RecordIO pipelines, elements of the expensive one. */
const EPOCH = { cheap: 150_000, expensive: 5_000, delayed: 40_000, remote: 20_000 };
const epochOf = (pipeline) => Math.max(64, Math.round(EPOCH[pipeline] * scale));
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const budget = Number(process.env.EDL_BENCH_BUDGET ?? 256 * 2 ** 20);
const spinMs = Number(process.env.EDL_BENCH_SPIN_MS ?? 1);
const pipelines = (process.env.EDL_BENCH_PIPELINES ?? 'cheap,expensive,remote,delayed').split(',');
const latencyMs = Number(process.env.EDL_BENCH_LATENCY_MS ?? 50);
/** The image records of the remote pipeline: ~3 KiB each, 64 MiB hold about 21,000. */
const IMAGE_BYTES = 2 ** 26;
const BUCKET = 'autotune';
/** Where a run reads the remote pipeline's file (main() puts the endpoint in the runs' environment). */
const REMOTE_URL = `s3://${BUCKET}/images.rio`;
/** The text records of recordio-scan.mjs: ~100 bytes each, 32 MiB hold about 300,000. */
const FILE_BYTES = 2 ** 25;
const cores = os.availableParallelism();

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** Sums the bytes of a record: the cheap map. */
function byteSum(record) {
  let sum = 0;
  for (let i = 0; i < record.length; i++) sum += record[i];
  return sum;
}

/** The first `records` records of the text file, sequentially. */
async function textSource(records) {
  const source = await RecordIODataSource.open([inputFile('text', 'none', FILE_BYTES)]);
  if (source.length < records)
    throw new Error(`an epoch of ${records} records > the ${source.length} records of the input`);
  return MapDataset.source(source).slice(0, records);
}

/**
 * Each pipeline: the dataset for a setting, the consumer's work per element, and the grid of
 * hand-set settings ('auto' last).
 */
const PIPELINES = {
  cheap: {
    grid: [1, 4, 16].map((prefetch) => ({ prefetch })),
    auto: { prefetch: 'auto' },
    consumerMs: 1,
    async dataset({ prefetch }) {
      return (await textSource(epochOf('cheap'))).toIterDataset().map(byteSum).batch(256).prefetch(prefetch);
    },
  },
  expensive: {
    grid: [...new Set([1, cores])].flatMap((workers) =>
      [
        [2 * workers, 2],
        [8 * workers, 8],
      ].map(([bufferSize, prefetch]) => ({ workers, bufferSize, prefetch })),
    ),
    auto: { workers: 'auto', bufferSize: 'auto', prefetch: 'auto' },
    consumerMs: 0,
    async dataset({ workers, bufferSize, prefetch }) {
      return MapDataset.range(epochOf('expensive'))
        .toIterDataset()
        .mapParallel({ module: FNS, export: 'spin', args: { ms: spinMs }, workers, bufferSize })
        .prefetch(prefetch);
    },
  },
  delayed: {
    grid: [1, 4, 16].map((prefetch) => ({ prefetch })),
    auto: { prefetch: 'auto' },
    consumerMs: 6,
    async dataset({ prefetch }) {
      const source = await textSource(epochOf('delayed'));
      const reads = IterDataset.fromIterable(async function* () {
        for (let i = 0; i < source.length; i++) {
          // A chunk of 64 records arrives after a delay; one chunk in 16 is a slow request.
          if (i % 64 === 0) await sleep((i / 64) % 16 === 15 ? 40 : 1);
          yield await source.get(i);
        }
      }, 'DelayedReads');
      return reads.map(byteSum).batch(64).prefetch(prefetch);
    },
  },
  remote: {
    grid: [1, 4, 16].map((prefetch) => ({ prefetch })),
    auto: { prefetch: 'auto' },
    consumerMs: 6,
    async dataset({ prefetch }) {
      const source = await RecordIODataSource.open([REMOTE_URL]);
      const records = epochOf('remote');
      if (source.length < records)
        throw new Error(`an epoch of ${records} records > the ${source.length} records of ${REMOTE_URL}`);
      const reads = IterDataset.fromIterable(async function* () {
        for (let i = 0; i < records; i++) yield await source.get(i);
      }, 'S3Reads');
      return reads.map(byteSum).batch(64).prefetch(prefetch);
    },
  },
};

/**
 * Starts s3rver with the delaying proxy in front of it and uploads the image file with its sidecar
 * index; the runs spawned afterwards read it through the proxy (their environment names it).
 */
async function startRemote() {
  const { CreateBucketCommand, PutObjectCommand } = await loadS3Client();
  const server = await startS3rver();
  const proxy = await startDelayProxy(Number(new URL(server.endpoint).port));
  const client = await s3Client(server.endpoint);
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const path = inputFile('image', 'none', IMAGE_BYTES);
  const sidecar = encodeSidecarIndex(await buildLocalSidecarIndex(path, 'recordio'));
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'images.rio', Body: readFileSync(path) }));
  await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: 'images.rio.idx', Body: sidecar }));
  Object.assign(process.env, S3RVER_ENV, { AWS_ENDPOINT_URL_S3: proxy.endpoint });
  proxy.latencyMs = latencyMs;
  return {
    version: server.version,
    async stop() {
      await proxy.close();
      await server.stop();
    },
  };
}

/** One run in this process: prints { seconds, elements, rssBefore, peakRss, converged, settings }. */
async function runOne({ pipeline, setting }) {
  configureAutotune({ ramBudgetBytes: budget });
  const spec = PIPELINES[pipeline];
  const dataset = await spec.dataset(setting);
  const rssBefore = process.memoryUsage().rss;
  const it = dataset.iterator();
  let elements = 0;
  let last;
  const started = performance.now();
  for (let r = await it.next(); !r.done; r = await it.next()) {
    elements++;
    spin(spec.consumerMs);
    if (elements % 16 === 0) last = autotuneSnapshot();
  }
  const seconds = (performance.now() - started) / 1000;
  // When the tuner last changed a setting, as a share of the epoch (the latest over the stages),
  // and in seconds from the start (the share of the stage's elements, of the run's time).
  const converged = Math.max(
    0,
    ...(last?.stages ?? []).map((s) => s.lastChangeAtElement / Math.max(1, s.elements)),
  );
  const settings = (last?.stages ?? []).map((s) => `${s.label}: ${s.parallelism}x${s.bufferSize}`).join(', ');
  console.log(
    JSON.stringify({
      seconds,
      elements,
      rssBefore,
      peakRss: process.resourceUsage().maxRSS * 1024,
      modelledBytes: last?.modelledBytes ?? 0,
      converged,
      convergedSeconds: converged * seconds,
      settings,
    }),
  );
}

/**
 * One run in its own process. Spawned asynchronously: the remote pipeline's delaying proxy runs in
 * this process, and must keep forwarding while a run reads through it.
 */
function spawnRun(pipeline, setting) {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [fileURLToPath(import.meta.url), '--run', JSON.stringify({ pipeline, setting })],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`run ${pipeline} ${JSON.stringify(setting)} failed:\n${stderr}`));
      else resolve(JSON.parse(stdout.trim().split('\n').at(-1)));
    });
  });
}

const label = (setting) =>
  Object.entries(setting)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
const mib = (bytes) => `${(bytes / 2 ** 20).toFixed(0)} MiB`;

async function main() {
  console.log(`# autotune: ${machineLine()}`);
  const startedAt = performance.now();
  console.log(
    `# epoch scale ${scale}, ${repeat} runs per configuration (median), RAM budget ${mib(budget)}, load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  // Generate the input once, before any timed run.
  inputFile('text', 'none', FILE_BYTES);
  const remote = pipelines.includes('remote') ? await startRemote() : undefined;
  if (remote !== undefined)
    console.log(`# remote: s3rver ${remote.version} behind a proxy adding ${latencyMs} ms per request`);
  const summary = [];
  for (const pipeline of pipelines) {
    const spec = PIPELINES[pipeline];
    const configs = [...spec.grid, spec.auto];
    const runs = configs.map(() => []);
    for (let r = 0; r < repeat; r++) {
      for (const [i, setting] of configs.entries()) runs[i].push(await spawnRun(pipeline, setting));
    }
    const rows = configs.map((setting, i) => {
      const rate = median(runs[i].map((x) => x.elements / x.seconds));
      return { setting, rate, runs: runs[i] };
    });
    const grid = rows.slice(0, -1);
    const best = grid.reduce((a, b) => (b.rate > a.rate ? b : a));
    const auto = rows.at(-1);
    const epoch = auto.runs[0].elements;
    const unit = pipeline === 'expensive' ? 'elements' : 'records';
    console.log(`\n## ${pipeline} (epoch: ${epochOf(pipeline)} ${unit}, ${epoch} elements at the consumer)`);
    for (const row of rows) {
      const mark = row === best ? '  <- best grid point' : row === auto ? '  <- auto' : '';
      console.log(`${label(row.setting).padEnd(40)} ${row.rate.toFixed(1).padStart(10)} elements/s${mark}`);
    }
    const peak = Math.max(...auto.runs.map((x) => x.peakRss));
    const before = Math.max(...auto.runs.map((x) => x.rssBefore));
    const converged = median(auto.runs.map((x) => x.converged));
    const convergedSeconds = median(auto.runs.map((x) => x.convergedSeconds));
    const modelled = Math.max(...auto.runs.map((x) => x.modelledBytes));
    console.log(
      `auto / best grid point (${label(best.setting)}): ${(auto.rate / best.rate).toFixed(3)}x; ` +
        `peak RSS ${mib(peak)} (${mib(before)} before the pipeline started; +${mib(peak - before)}) against a budget of ${mib(budget)}, ` +
        `tuned stages modelled at ${(modelled / 1024).toFixed(0)} KiB; last setting change at ${(100 * converged).toFixed(1)}% of the epoch (~${convergedSeconds.toFixed(2)} s); ` +
        `settings: ${auto.runs[0].settings}`,
    );
    summary.push({
      pipeline,
      ratio: auto.rate / best.rate,
      overBudget: peak - before > budget,
      converged,
    });
  }
  await remote?.stop();
  console.log(
    `\n## goals (${((performance.now() - startedAt) / 60_000).toFixed(1)} minutes in all): auto >= 0.95x best grid point, within budget, converged in the first 5% of the epoch`,
  );
  for (const s of summary) {
    console.log(
      `${s.pipeline.padEnd(10)} ratio ${s.ratio.toFixed(3)} ${s.ratio >= 0.95 ? 'ok' : 'MISSED'}; ` +
        `budget ${s.overBudget ? 'EXCEEDED' : 'ok'}; converged at ${(100 * s.converged).toFixed(1)}% ${s.converged <= 0.05 ? 'ok' : 'MISSED'}`,
    );
  }
}

const at = process.argv.indexOf('--run');
if (at >= 0) await runOne(JSON.parse(process.argv[at + 1]));
else await main();
