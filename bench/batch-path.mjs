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
 *
 * Every path keeps its reader open across its passes, as a worker keeps its reader for the job:
 * a reader opened per pass would charge each pass with faulting in fresh memory for its first
 * batches (its spare buffers die with it), which made a pass cost anything from one to three times
 * the steady figure depending on when V8 last collected. Passes alternate between the paths; the
 * median pass of each is reported.
 *
 * Prints the machine and the load average before and after: on a shared machine, compare the
 * per-CPU-second figures (goal 2 is a wall-time ratio and needs two idle cores). Takes about a
 * minute on an idle 2-core machine (plus generating the inputs once, under bench/data/).
 * Environment: EDL_BENCH_BYTES (file size, default 64 MiB), EDL_BENCH_REPEAT (passes, median kept,
 * default 7), EDL_BENCH_GZIP_SETS (default "text,image"), EDL_BENCH_BATCH (records per native
 * prefetch batch; default: the reader's), EDL_BENCH_MNIST_RECORDS (default 60,000; 0 skips goal 3).
 */
import { existsSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import { RecordIODataReader } from '@edl/data';
import { RecordIOReader, RecordIOWriter } from '@edl/recordio';
import { decodeMnistBatch, mnistDatasetFnWith, mnistDefinition } from '../packages/model-zoo/dist/index.js';
import { TaskType } from '../packages/proto/dist/index.js';
import { batchRecords, minibatches, selectBackend, tf } from '../packages/worker/dist/index.js';
import { TaskFeed } from '../packages/worker/dist/task-feed.js';
import { Timers } from '../packages/worker/dist/timers.js';
import { machineLine } from './lib/machine.mjs';
import { inputFile, median, touch } from './lib/prefetch-input.mjs';

const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 26);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 7);
const gzipSets = (process.env.EDL_BENCH_GZIP_SETS ?? 'text,image').split(',').filter((s) => s !== '');
const TASK_RECORDS = 8192;
const mnistRecords = Number(process.env.EDL_BENCH_MNIST_RECORDS ?? 60_000);
const MNIST_TASK_RECORDS = 1024;
const MNIST_MINIBATCH = 64;
const MNIST_RECORD_BYTES = 785;
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

/** A master that hands out the file's records as tasks of `taskRecords`, then says the job is over. */
function scriptedMaster(path, total, taskRecords = TASK_RECORDS) {
  let next = 0;
  let id = 0;
  return {
    async getTask() {
      if (next >= total) return { jobFinished: true, jobError: '' };
      const start = next;
      next = Math.min(total, next + taskRecords);
      id += 1;
      const task = {
        id,
        type: TaskType.TRAINING,
        shardName: path,
        start,
        end: next,
        modelVersion: 0,
        epoch: 0,
        leaseMs: 0,
        extendedConfig: {},
      };
      return { jobFinished: false, jobError: '', task };
    },
  };
}

function feedPass(reader, path, total, mode) {
  return measure(async () => {
    const feed = new TaskFeed({
      master: scriptedMaster(path, total),
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

/** Sums a minibatch's pixels and disposes its tensors: the check that the paths decoded the same. */
function consume(minibatch) {
  const check = minibatch.features.sum().dataSync()[0] + minibatch.labels.sum().dataSync()[0];
  tf.dispose([minibatch.features, minibatch.labels]);
  return check;
}

/** readSync of each task range, then minibatches of 64 decoded in a plain loop. */
function mnistReadSyncPass(reader, total) {
  return measure(async () => {
    let records = 0;
    let check = 0;
    for (let start = 0; start < total; start += MNIST_TASK_RECORDS) {
      const batch = reader.readSync(start, Math.min(MNIST_TASK_RECORDS, total - start));
      for (let i = 0; i < batch.length; i += MNIST_MINIBATCH) {
        const rows = [];
        for (let j = i; j < Math.min(batch.length, i + MNIST_MINIBATCH); j++) rows.push(batch.get(j));
        check += consume(decodeMnistBatch(rows, true));
        records += rows.length;
      }
      batch.release();
    }
    return { records, check };
  });
}

/**
 * A datasetFn over a TaskFeed as the worker runs it: minibatches taken (attributed to tasks) and
 * their tensors disposed. Tasks of 1,024 are multiples of 64, so every path decodes the same
 * minibatches (a shuffled one holds the same records in another order).
 */
function mnistFeedPass(reader, path, total, datasetFn, reuseBatches) {
  return measure(async () => {
    const feed = new TaskFeed({
      master: scriptedMaster(path, total, MNIST_TASK_RECORDS),
      workerId: 'bench',
      readerFor: () => reader,
      timers: new Timers(),
      reuseBatches,
    });
    let records = 0;
    let check = 0;
    const metadata = { minibatchSize: MNIST_MINIBATCH, reader: {} };
    for (;;) {
      const head = await feed.nextHead();
      if (head === undefined) break;
      for await (const minibatch of datasetFn(feed.dataset(head, 'bench'), 'training', metadata)) {
        const n = minibatch.features.shape[0];
        feed.take(n);
        records += n;
        check += consume(minibatch);
      }
    }
    return { records, check };
  });
}

/** The record-at-a-time path the batch path replaced: batchRecords over the records dataset. */
async function* recordAtATimeDatasetFn(records, _mode, metadata) {
  for await (const rows of batchRecords(records, metadata.minibatchSize)) yield decodeMnistBatch(rows, true);
}

let goal3;
if (mnistRecords > 0) {
  await selectBackend({ backend: 'cpu' });
  const path = mnistFile(mnistRecords);
  const syncMnist = RecordIOReader.openSync(path);
  const mnistReader = await RecordIODataReader.open({ files: [path] });
  // The worker hands consumed batches back to the reader when the definition allows it.
  const reuse = mnistDefinition().reuseRecordMemory === true;
  const mnistPaths = [
    ['MNIST datasetFn, batch path, no shuffle', mnistDatasetFnWith(0), reuse],
    ['MNIST datasetFn (default: shuffle 512)', mnistDatasetFnWith(), reuse],
    ['record at a time (batchRecords), before', recordAtATimeDatasetFn, false],
  ];
  const mnistRuns = { readSync: [], ...Object.fromEntries(mnistPaths.map(([name]) => [name, []])) };
  for (let k = 0; k < Math.min(3, repeat); k++) {
    await mnistReadSyncPass(syncMnist, mnistRecords);
    for (const [, fn, reuseBatches] of mnistPaths)
      await mnistFeedPass(mnistReader, path, mnistRecords, fn, reuseBatches);
  }
  for (let k = 0; k < repeat; k++) {
    mnistRuns.readSync.push(await mnistReadSyncPass(syncMnist, mnistRecords));
    for (const [name, fn, reuseBatches] of mnistPaths)
      mnistRuns[name].push(await mnistFeedPass(mnistReader, path, mnistRecords, fn, reuseBatches));
  }
  syncMnist.close();
  await mnistReader.close();
  const mnistBase = typical(mnistRuns.readSync);
  console.log(
    `MNIST, ${mnistRecords} records of ${MNIST_RECORD_BYTES} B, tasks of ${MNIST_TASK_RECORDS}, minibatches of ${MNIST_MINIBATCH}, decoded to tensors (cpu backend):`,
  );
  console.log(row('readSync + decode loop (baseline)', mnistBase));
  for (const [name, fn] of mnistPaths) {
    const r = typical(mnistRuns[name]);
    // The pixel sums of a shuffled minibatch may differ in the last bits: compare records only.
    if (r.records !== mnistBase.records) throw new Error(`${name} decoded ${r.records} records`);
    if (fn === mnistPaths[0][1] && r.check !== mnistBase.check)
      throw new Error(`${name} disagrees with readSync`);
    console.log(row(name, r, mnistBase));
    if (goal3 === undefined) goal3 = r.records / r.cpu / (mnistBase.records / mnistBase.cpu);
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
