#!/usr/bin/env node
/**
 * One sample of batch-path.mjs's MNIST section (goal 3), run in a fresh process per sample:
 * `node batch-path-mnist.mjs <file> <records> <path> <epochs>`, where path is one of
 * `PATHS` below. Warms the path up on two epochs of the file, then measures `epochs` more,
 * and prints one line `RESULT {json}`: records, check sum, wall and CPU seconds of the measured
 * epochs, their CPU split by thread (see thread-cpu.mjs) and V8's garbage collections.
 *
 * A fresh process per sample, not passes alternated in one process: V8 sets its heap limits from
 * the collections before (live size, and collection and allocation speeds measured in wall time),
 * so in one process a pass inherits the garbage and the limits the other path left, and a forced
 * collection between passes only shrank the limits for the next (a pass then ran 6 to 17
 * mark-compacts for the same work). Samples in fresh processes are independent. Each still settles
 * into one of two regimes, no mark-compact in its measured epochs or one every few tens of
 * milliseconds (about 0.4 CPU-second more per sample, mostly on V8's helper threads), on every
 * path alike and more often on a loaded machine: hence medians over several samples, with each
 * sample's mark-compacts printed.
 */
import v8 from 'node:v8';
import { RecordIODataReader } from '@edl/data';
import { RecordIOReader } from '@edl/recordio';
import {
  decodeMnistBatch,
  mnistDatasetFnWith,
  mnistDefinition,
} from '../../packages/model-zoo/dist/index.js';
import { batchRecords, selectBackend, tf } from '../../packages/worker/dist/index.js';
import { TaskFeed } from '../../packages/worker/dist/task-feed.js';
import { Timers } from '../../packages/worker/dist/timers.js';
import { scriptedMaster } from './scripted-master.mjs';
import { threadCpu, threadCpuSince } from './thread-cpu.mjs';

const MNIST_TASK_RECORDS = 1024;
const MNIST_MINIBATCH = 64;
const WARM_UP_EPOCHS = 2;

/** Sums a minibatch's pixels and disposes its tensors: the check that the paths decoded the same. */
function consume(minibatch) {
  const check = minibatch.features.sum().dataSync()[0] + minibatch.labels.sum().dataSync()[0];
  tf.dispose([minibatch.features, minibatch.labels]);
  return check;
}

/** readSync of each task range, then minibatches of 64 decoded in a plain loop, `epochs` times. */
async function readSyncPass(reader, _file, total, epochs) {
  let records = 0;
  let check = 0;
  for (let epoch = 0; epoch < epochs; epoch++) {
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
  }
  return { records, check };
}

/** The record-at-a-time path the batch path replaced: batchRecords over the records dataset. */
async function* recordAtATimeDatasetFn(records, _mode, metadata) {
  for await (const rows of batchRecords(records, metadata.minibatchSize)) yield decodeMnistBatch(rows, true);
}

/**
 * A datasetFn over a TaskFeed as the worker runs it, `epochs` times over the file's tasks of 1,024:
 * minibatches taken (attributed to tasks) and their tensors disposed. Tasks of 1,024 are multiples
 * of 64, so every path decodes the same minibatches (a shuffled one holds the same records in
 * another order). The worker hands consumed batches back to the reader when the definition sets
 * `reuseRecordMemory` (the MNIST one does).
 */
function feedPass(datasetFn, reuseBatches) {
  return async (reader, file, total, epochs) => {
    const feed = new TaskFeed({
      master: scriptedMaster(file, total, MNIST_TASK_RECORDS, epochs),
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
  };
}

const reuse = mnistDefinition().reuseRecordMemory === true;
/**
 * The paths by the name a child is given: how it opens its reader (kept open across the warm-up
 * and the measured epochs, as a worker keeps its reader for the job) and one pass.
 */
const PATHS = {
  readSync: [async (file) => RecordIOReader.openSync(file), readSyncPass],
  batch: [openDataReader, feedPass(mnistDatasetFnWith(0), reuse)],
  shuffle: [openDataReader, feedPass(mnistDatasetFnWith(), reuse)],
  recordAtATime: [openDataReader, feedPass(recordAtATimeDatasetFn, false)],
  batchNoPrefetch: [(file) => openDataReader(file, false), feedPass(mnistDatasetFnWith(0), reuse)],
};

/** The reader a worker opens for the file: its default options, or `prefetch` when given. */
function openDataReader(file, prefetch) {
  return RecordIODataReader.open(prefetch === undefined ? { files: [file] } : { files: [file], prefetch });
}

/** Garbage collections by kind, and their pauses on the main thread in seconds. */
function collections(profile) {
  const gc = { scavenges: 0, markCompacts: 0, pauseSeconds: 0 };
  for (const { gcType, cost } of profile.statistics) {
    if (gcType === 'Scavenge' || gcType === 'MinorMarkSweep') gc.scavenges += 1;
    else if (gcType === 'MarkSweepCompact') gc.markCompacts += 1;
    gc.pauseSeconds += cost / 1e6;
  }
  return gc;
}

const [file, recordsArg, name, epochsArg] = process.argv.slice(2);
const path = PATHS[name];
if (path === undefined) {
  throw new Error(`Expected one of ${Object.keys(PATHS).join(', ')} for the path but received ${name}`);
}
const [open, pass] = path;
const total = Number(recordsArg);
await selectBackend({ backend: 'cpu' });
const reader = await open(file);
// Two epochs before measuring: the second still cost a third more than the later ones (the
// optimizing compiler works on V8's helper threads meanwhile, and the heap is still growing).
await pass(reader, file, total, WARM_UP_EPOCHS);
const profiler = new v8.GCProfiler();
profiler.start();
const threads = threadCpu();
const cpu = process.cpuUsage();
const started = performance.now();
const { records, check } = await pass(reader, file, total, Number(epochsArg));
const seconds = (performance.now() - started) / 1000;
const used = process.cpuUsage(cpu);
const byThread = threadCpuSince(threads);
const gc = collections(profiler.stop());
await reader.close();
const cpuSeconds = (used.user + used.system) / 1e6;
const result = { records, check, seconds, cpu: cpuSeconds, byThread, gc };
console.log(
  `RESULT ${JSON.stringify({ ...result, taskRecords: MNIST_TASK_RECORDS, minibatch: MNIST_MINIBATCH })}`,
);
