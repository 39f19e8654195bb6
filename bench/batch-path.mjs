#!/usr/bin/env node
/**
 * Batches end to end (issue 13 §1): the worker's read path against the native limit, per CPU-second.
 * Prints two goal ratios at the end:
 *
 * GOAL 1, ~100-byte uncompressed text records: the worker's path — a TaskFeed over a
 * RecordIODataReader with its default options, fed tasks of 8192 records by a scripted master,
 * records counted from batch lengths (not trained), batches released — against `readSync` +
 * `release()` over chunk-aligned ~4 MiB ranges (the native limit as seen from JavaScript), in
 * records per CPU-second of the whole process (all threads). Goal >= 0.8. Other rows, for the
 * record: `readSync` over the tasks' own ranges, the records dataset `datasetFn` receives (one
 * promise per record), the batch path `minibatches(records, 64)` over it, and the same TaskFeed through the native prefetcher (`storedFiles:
 * 'prefetch'`, 2 and 1 threads) and with `prefetch: false`.
 *
 * GOAL 2, gzip files (text and image records) through `RecordIODataReader.readBatches` with the
 * reader's default batch size: 2 prefetch threads against 1, records/s by wall time. Goal >= 1.8.
 *
 * GOAL 3 (issue 26 item 3), the batch-aware record path of `datasetFn`: the MNIST definition's
 * `datasetFn` (minibatches cut from the reader's batches, decoded once each) over a TaskFeed, its
 * minibatches attributed with take() and their tensors disposed, against `readSync` of the same
 * task ranges followed by the same decode (`decodeMnistBatch` per minibatch of 64) in a plain
 * loop, in records per CPU-second. Goal >= 0.8 without the shuffle buffer; the definition's default
 * (a 512-record window shuffle per task) and the record-at-a-time path it replaced (`batchRecords`
 * over the records dataset, whose batches are not handed back) are printed for the record. The
 * TaskFeed hands consumed batches back to the reader as the worker does for a definition that sets
 * `reuseRecordMemory` (the MNIST one does). Records are synthetic 785-byte MNIST
 * records (label + 28x28 pixels), EDL_BENCH_MNIST_RECORDS of them (default 60,000), in tasks of
 * 1,024; the tensors are made on the cpu backend.
 * Each sample of a path runs in a fresh Node.js process (lib/batch-path-mnist.mjs): two epochs of
 * warm-up, then EDL_BENCH_MNIST_EPOCHS epochs measured (default 3, about 0.7 CPU-second). Passes of
 * 60,000 records in one process were neither long nor independent: V8 sets its heap limits from
 * the collections before, so a pass inherited the garbage and the limits the other path left (the
 * bimodal x0.6 / x1.0 of the earlier figure). A sample still runs either no mark-compact or one
 * every few tens of milliseconds (a regime that costs about 0.4 CPU-second per sample, on every
 * path alike): samples alternate between the paths, in reverse order every other round, for
 * EDL_BENCH_MNIST_SAMPLES rounds (default 5); each row is the median sample and GOAL 3 the ratio of
 * the medians. Under each row: the range over the samples, the median CPU seconds by thread (the
 * main thread; V8's helper threads, which run its concurrent garbage collector and compiler;
 * libuv's pool; native threads such as the prefetcher's) and each sample's mark-compacts.
 *
 * Every path keeps its reader open across its passes (the MNIST ones across a sample's epochs), as
 * a worker keeps its reader for the job:
 * a reader opened per pass would charge each pass with faulting in fresh memory for its first
 * batches (its spare buffers die with it), which made a pass cost anything from one to three times
 * the steady figure depending on when V8 last collected. Passes alternate between the paths; the
 * median pass of each is reported.
 *
 * Prints the machine and the load average before and after: on a shared machine, compare the
 * per-CPU-second figures (goal 2 is a wall-time ratio and needs two idle cores). Takes about a
 * minute on an idle 2-core machine (plus generating the inputs once, under bench/data/); the MNIST
 * section alone, about 35 s of it (20 processes of about 1.7 s): to run just that one, set
 * EDL_BENCH_BYTES=1048576 EDL_BENCH_REPEAT=1 EDL_BENCH_GZIP_SETS= (the other figures then mean
 * nothing).
 * Environment: EDL_BENCH_BYTES (file size, default 64 MiB), EDL_BENCH_REPEAT (passes, median kept,
 * default 7), EDL_BENCH_GZIP_SETS (default "text,image"), EDL_BENCH_BATCH (records per native
 * prefetch batch; default: the reader's), EDL_BENCH_MNIST_RECORDS (default 60,000; 0 skips goal 3),
 * EDL_BENCH_MNIST_EPOCHS (default 3), EDL_BENCH_MNIST_SAMPLES (default 5), EDL_BENCH_MNIST_PATHS
 * (the MNIST rows to sample, of readSync, batch, shuffle, recordAtATime and batchNoPrefetch;
 * default the first four, the baseline always).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { RecordIODataReader } from '@edl/data';
import { RecordIOReader, RecordIOWriter } from '@edl/recordio';
import { minibatches } from '../packages/worker/dist/index.js';
import { TaskFeed } from '../packages/worker/dist/task-feed.js';
import { Timers } from '../packages/worker/dist/timers.js';
import { machineLine } from './lib/machine.mjs';
import { inputFile, median, touch } from './lib/prefetch-input.mjs';
import { scriptedMaster } from './lib/scripted-master.mjs';

const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 26);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 7);
const gzipSets = (process.env.EDL_BENCH_GZIP_SETS ?? 'text,image').split(',').filter((s) => s !== '');
const TASK_RECORDS = 8192;
const mnistRecords = Number(process.env.EDL_BENCH_MNIST_RECORDS ?? 60_000);
const mnistEpochs = Number(process.env.EDL_BENCH_MNIST_EPOCHS ?? 3);
const mnistSamples = Number(process.env.EDL_BENCH_MNIST_SAMPLES ?? 5);
const MNIST_RECORD_BYTES = 785;
/** The paths of the MNIST section: the name its child process is given, and its row. */
const MNIST_PATHS = [
  ['readSync', 'readSync + decode loop (baseline)'],
  ['batch', 'MNIST datasetFn, batch path, no shuffle'],
  ['shuffle', 'MNIST datasetFn (default: shuffle 512)'],
  ['recordAtATime', 'record at a time (batchRecords), before'],
];
/**
 * Sampled only when named in EDL_BENCH_MNIST_PATHS: the batch path over a reader without the
 * prefetcher (`prefetch: false`: `batches()`, decoding on libuv's pool one batch ahead), which
 * tells the prefetcher threads' share of the cost.
 */
const MNIST_EXTRA_PATHS = [['batchNoPrefetch', 'batch path, no shuffle, prefetch: false']];
/** The paths sampled (EDL_BENCH_MNIST_PATHS; default MNIST_PATHS): the baseline always. */
const mnistPathNames = new Set([
  'readSync',
  ...(process.env.EDL_BENCH_MNIST_PATHS ?? MNIST_PATHS.map(([name]) => name).join(',')).split(','),
]);
const mnistPaths = [...MNIST_PATHS, ...MNIST_EXTRA_PATHS].filter(([name]) => mnistPathNames.delete(name));
if (mnistPathNames.size > 0) {
  const known = [...MNIST_PATHS, ...MNIST_EXTRA_PATHS].map(([name]) => name).join(', ');
  throw new Error(
    `Expected EDL_BENCH_MNIST_PATHS among ${known} but received ${[...mnistPathNames].join(', ')}`,
  );
}
/** Records per native prefetch batch (the reader's `prefetch.batchSize`; undefined: its default). */
const batchSize = process.env.EDL_BENCH_BATCH === undefined ? undefined : Number(process.env.EDL_BENCH_BATCH);
/** `prefetch` options of the reader: its defaults, with `extra` and the batch size asked for. */
const prefetchOptions = (extra) => (batchSize === undefined ? { ...extra } : { ...extra, batchSize });
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function measure(fn) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const { records, check } = await fn();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { records, check, seconds, cpu: (used.user + used.system) / 1e6 };
}

function readSyncPass(reader) {
  return measure(async () => {
    let records = 0;
    let check = 0;
    // Chunk-aligned ranges of about 4 MiB of payload.
    let start = 0;
    let bytes = 0;
    for (const chunk of reader.chunks) {
      bytes += chunk.compressedSize;
      const end = chunk.firstRecord + chunk.numRecords;
      if (bytes >= 4 * 2 ** 20 || end === reader.numRecords) {
        const batch = reader.readSync(start, end - start);
        records += batch.length;
        check += touch(batch);
        batch.release();
        start = end;
        bytes = 0;
      }
    }
    return { records, check };
  });
}

/** readSync + release over the tasks' ranges (chunks cut by two tasks are decoded twice). */
function readSyncTasksPass(reader) {
  return measure(async () => {
    let records = 0;
    let check = 0;
    for (let start = 0; start < reader.numRecords; start += TASK_RECORDS) {
      const batch = reader.readSync(start, Math.min(TASK_RECORDS, reader.numRecords - start));
      records += batch.length;
      check += touch(batch);
      batch.release();
    }
    return { records, check };
  });
}

function feedPass(reader, path, total, mode) {
  return measure(async () => {
    const feed = new TaskFeed({
      master: scriptedMaster(path, total, TASK_RECORDS),
      workerId: 'bench',
      readerFor: () => reader,
      timers: new Timers(),
    });
    let records = 0;
    let check = 0;
    for (;;) {
      const head = await feed.nextHead();
      if (head === undefined) break;
      if (mode === 'batches') {
        for await (const batch of feed.batches(head)) {
          check += touch(batch);
          feed.take(batch.length);
          records += batch.length;
          batch.release();
        }
      } else if (mode === 'minibatches') {
        // The batch path of datasetFn: minibatches of 64 cut from the reader's batches.
        for await (const rows of minibatches(feed.dataset(head, 'bench'), 64)) {
          for (const record of rows) check += record.length + (record.length > 0 ? record[0] : 0);
          records += rows.length;
          feed.take(rows.length);
        }
      } else {
        // What datasetFn iterates: records one at a time, taken by minibatches of 64 (batches are
        // released by take()).
        let minibatch = 0;
        for await (const record of feed.dataset(head, 'bench')) {
          check += record.length + (record.length > 0 ? record[0] : 0);
          records += 1;
          if (++minibatch === 64) {
            feed.take(minibatch);
            minibatch = 0;
          }
        }
        if (minibatch > 0) feed.take(minibatch);
      }
    }
    return { records, check };
  });
}

function readerPass(reader, path, total) {
  return measure(async () => {
    let records = 0;
    let check = 0;
    const ranges = [];
    for (let s = 0; s < total; s += TASK_RECORDS)
      ranges.push({ shardName: path, start: s, end: Math.min(total, s + TASK_RECORDS) });
    for (const r of ranges) reader.prefetch?.(r);
    for (const r of ranges) {
      for await (const batch of reader.readBatches(r)) {
        check += touch(batch);
        records += batch.length;
        batch.release();
      }
    }
    return { records, check };
  });
}

/** The median pass's wall and CPU seconds (each its own median), after checking the passes agree. */
function typical(results) {
  const checks = new Set(results.map((r) => `${r.records}/${r.check}`));
  if (checks.size !== 1) throw new Error(`passes disagree on the records: ${[...checks].join(', ')}`);
  return {
    ...results[0],
    seconds: median(results.map((r) => r.seconds)),
    cpu: median(results.map((r) => r.cpu)),
  };
}

const row = (name, r, base) =>
  `  ${name.padEnd(38)} ${(r.records / r.seconds / 1e6).toFixed(2).padStart(6)} M rec/s wall  ` +
  `${(r.records / r.cpu / 1e6).toFixed(2).padStart(6)} M rec/CPU-s` +
  (base === undefined
    ? ''
    : `  x${(r.records / r.cpu / (base.records / base.cpu)).toFixed(2)} of readSync per CPU-s`);

console.log(`batch-path: ${machineLine()}`);
console.log(`load average before ${load()}`);

const text = inputFile('text', 'none', fileBytes);
const total = RecordIOReader.openSync(text).numRecords;
const WORKER_PATH = "TaskFeed.batches (the worker's path)";
const variants = [
  [WORKER_PATH, 'batches', prefetchOptions({})],
  ['TaskFeed.dataset (records, as datasetFn)', 'dataset', prefetchOptions({})],
  ['minibatches(TaskFeed.dataset, 64)', 'minibatches', prefetchOptions({})],
  [
    'TaskFeed.batches, prefetcher, 2 threads',
    'batches',
    prefetchOptions({ threads: 2, storedFiles: 'prefetch' }),
  ],
  [
    'TaskFeed.batches, prefetcher, 1 thread',
    'batches',
    prefetchOptions({ threads: 1, storedFiles: 'prefetch' }),
  ],
  ['TaskFeed.batches, prefetch: false', 'batches', false],
];
const runs = { readSync: [], readSyncTasks: [], ...Object.fromEntries(variants.map(([name]) => [name, []])) };
const syncReader = RecordIOReader.openSync(text);
const readers = new Map();
for (const [name, , prefetch] of variants) {
  readers.set(name, await RecordIODataReader.open({ files: [text], prefetch }));
}
// Three passes of each, not counted: the first passes of a path run before V8 has optimized it
// (its optimizing compiler works on other threads, whose CPU time a pass would count).
for (let k = 0; k < 3; k++) {
  await readSyncPass(syncReader);
  await readSyncTasksPass(syncReader);
  for (const [name, mode] of variants) await feedPass(readers.get(name), text, total, mode);
}
for (let k = 0; k < repeat; k++) {
  runs.readSync.push(await readSyncPass(syncReader));
  runs.readSyncTasks.push(await readSyncTasksPass(syncReader));
  for (const [name, mode] of variants) runs[name].push(await feedPass(readers.get(name), text, total, mode));
}
syncReader.close();
for (const reader of readers.values()) await reader.close();
const base = typical(runs.readSync);
console.log(
  `text, none, ${total} records of ~100 B, tasks of ${TASK_RECORDS}, prefetch batches of ${batchSize ?? 'the default'}:`,
);
console.log(row('readSync + release (baseline)', base));
console.log(row('readSync + release, task ranges', typical(runs.readSyncTasks), base));
let goal1 = 0;
for (const [name] of variants) {
  const r = typical(runs[name]);
  if (r.check !== base.check) throw new Error(`${name} disagrees with readSync on the records`);
  console.log(row(name, r, base));
  if (name === WORKER_PATH) goal1 = r.records / r.cpu / (base.records / base.cpu);
}

const goal2 = [];
for (const set of gzipSets) {
  const path = inputFile(set, 'gzip', fileBytes);
  const n = RecordIOReader.openSync(path).numRecords;
  const byThreads = { 1: [], 2: [] };
  const gzipReaders = {};
  for (const t of [1, 2]) {
    gzipReaders[t] = await RecordIODataReader.open({
      files: [path],
      prefetch: prefetchOptions({ threads: t }),
    });
    await readerPass(gzipReaders[t], path, n);
  }
  for (let k = 0; k < repeat; k++) {
    for (const t of [1, 2]) byThreads[t].push(await readerPass(gzipReaders[t], path, n));
  }
  for (const t of [1, 2]) await gzipReaders[t].close();
  const one = typical(byThreads[1]);
  const two = typical(byThreads[2]);
  console.log(`${set}, gzip, ${n} records through RecordIODataReader.readBatches:`);
  console.log(row('1 prefetch thread', one));
  console.log(row('2 prefetch threads', two));
  goal2.push([set, one.seconds / two.seconds]);
}

/** A RecordIO file of `count` synthetic MNIST records (label, then 784 pixels), written once. */
function mnistFile(count) {
  const dir = new URL('./data/', import.meta.url).pathname;
  const path = `${dir}mnist-synthetic-${count}.rio`;
  if (existsSync(path)) return path;
  mkdirSync(dir, { recursive: true });
  const writer = RecordIOWriter.createSync(path);
  const record = new Uint8Array(MNIST_RECORD_BYTES);
  for (let i = 0; i < count; i++) {
    record[0] = i % 10;
    for (let p = 1; p < MNIST_RECORD_BYTES; p++) record[p] = (i * 31 + p * 7) & 0xff;
    writer.write(record);
  }
  writer.close();
  return path;
}

const MNIST_CHILD = fileURLToPath(new URL('./lib/batch-path-mnist.mjs', import.meta.url));

/** One sample of the MNIST path `name` in a fresh Node.js process (see lib/batch-path-mnist.mjs). */
function mnistSample(file, name) {
  const child = spawnSync(
    process.execPath,
    [MNIST_CHILD, file, String(mnistRecords), name, String(mnistEpochs)],
    { encoding: 'utf8', maxBuffer: 2 ** 24 },
  );
  const line = child.stdout.split('\n').find((l) => l.startsWith('RESULT '));
  if (child.status !== 0 || line === undefined) {
    throw new Error(`the MNIST sample of ${name} failed (exit ${child.status}): ${child.stderr.trim()}`);
  }
  return JSON.parse(line.slice('RESULT '.length));
}

/** A path's samples: the median sample's seconds, the range per CPU-second, where the CPU went. */
function summary(samples) {
  const records = samples[0].records;
  if (samples.some((r) => r.records !== records))
    throw new Error('samples of one path disagree on the records');
  const mid = (pick) => median(samples.map(pick));
  const rates = samples.map((r) => r.records / r.cpu / 1e6);
  const { byThread } = samples[0];
  return {
    records,
    check: samples[0].check,
    seconds: mid((r) => r.seconds),
    cpu: mid((r) => r.cpu),
    detail:
      `${' '.repeat(6)}${Math.min(...rates).toFixed(2)}-${Math.max(...rates).toFixed(2)} M rec/CPU-s over ${samples.length} samples; ` +
      `median CPU-s: ${Object.keys(byThread)
        .map((thread) => `${thread} ${mid((r) => r.byThread[thread]).toFixed(2)}`)
        .join(', ')}; ` +
      `${mid((r) => r.gc.scavenges)} scavenges, mark-compacts ${samples.map((r) => r.gc.markCompacts).join(' ')}, ` +
      `${(mid((r) => r.gc.pauseSeconds) * 1000).toFixed(0)} ms of GC pauses`,
  };
}

let goal3;
if (mnistRecords > 0) {
  const file = mnistFile(mnistRecords);
  const samples = Object.fromEntries(mnistPaths.map(([name]) => [name, []]));
  for (let k = 0; k < mnistSamples; k++) {
    // Alternated, in reverse order every other round: a change in the machine's load falls on
    // every path alike.
    for (const [name] of k % 2 === 0 ? mnistPaths : [...mnistPaths].reverse()) {
      samples[name].push(mnistSample(file, name));
    }
  }
  const { taskRecords, minibatch } = samples.readSync[0];
  console.log(
    `MNIST, ${mnistRecords} records of ${MNIST_RECORD_BYTES} B, tasks of ${taskRecords}, minibatches of ${minibatch}, decoded to tensors (cpu backend), ${mnistEpochs} epochs per sample, ${mnistSamples} samples per path, each in a fresh process:`,
  );
  const mnistBase = summary(samples.readSync);
  for (const [name, rowName] of mnistPaths) {
    const r = name === 'readSync' ? mnistBase : summary(samples[name]);
    if (r.records !== mnistBase.records) throw new Error(`${rowName} decoded ${r.records} records`);
    // The pixel sums of a shuffled minibatch may differ in the last bits: compare records only.
    if ((name === 'batch' || name === 'batchNoPrefetch') && r.check !== mnistBase.check)
      throw new Error(`${rowName} disagrees with readSync`);
    console.log(row(rowName, r, name === 'readSync' ? undefined : mnistBase));
    console.log(r.detail);
    if (name === 'batch') goal3 = r.records / r.cpu / (mnistBase.records / mnistBase.cpu);
  }
}

console.log(`load average after ${load()}`);
console.log(
  `GOAL 1  worker's path / readSync + release, per CPU-second, ~100 B stored records: x${goal1.toFixed(2)} (goal >= 0.8)`,
);
if (goal3 !== undefined) {
  console.log(
    `GOAL 3  MNIST datasetFn over the batch path / readSync + the same decode, per CPU-second: x${goal3.toFixed(2)} (goal >= 0.8)`,
  );
}
for (const [set, ratio] of goal2) {
  console.log(
    `GOAL 2  ${set} gzip through the reader, 2 prefetch threads / 1 thread, wall: x${ratio.toFixed(2)} (goal >= 1.8)`,
  );
}
