#!/usr/bin/env node
/**
 * Batches end to end (issue 13 §1): the worker's read path against the native limit, per CPU-second.
 *
 * Part 1, ~100-byte uncompressed text records: `readSync` + `release()` over chunk-aligned ~4 MiB
 * ranges (the baseline: the native limit as seen from JavaScript) against the worker's path, a
 * TaskFeed over a RecordIODataReader fed tasks of 8192 records by a scripted master, records counted
 * (not trained): through `TaskFeed.batches()` (the batch path: one step per batch, records counted
 * from batch lengths, batches released) and through `TaskFeed.records()` (one async step per
 * record, as the training loop consumes them today). Goal: batch path >= 0.8x readSync per
 * CPU-second.
 *
 * Part 2, gzip files (text and image records) through the reader: `RecordIODataReader.readBatches`
 * with 1 and 2 prefetch threads, records/s by wall time and per CPU-second. Goal: 2 threads >=
 * 1.8x one thread.
 *
 * Prints the machine and the load average before and after: on a shared machine, compare the
 * per-CPU-second columns. Environment: EDL_BENCH_BYTES (file size, default 64 MiB),
 * EDL_BENCH_REPEAT (passes, best kept, default 3), EDL_BENCH_GZIP_SETS (default "text,image"),
 * EDL_BENCH_BATCH (records per native prefetch batch, default 4096).
 */
import os from 'node:os';
import { RecordIODataReader } from '@edl/data';
import { RecordIOReader } from '@edl/recordio';
import { TaskType } from '../packages/proto/dist/index.js';
import { TaskFeed } from '../packages/worker/dist/task-feed.js';
import { Timers } from '../packages/worker/dist/timers.js';
import { machineLine } from './lib/machine.mjs';
import { inputFile, touch } from './lib/prefetch-input.mjs';

const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 26);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const gzipSets = (process.env.EDL_BENCH_GZIP_SETS ?? 'text,image').split(',').filter((s) => s !== '');
const TASK_RECORDS = 8192;
/** Records per native prefetch batch (the reader's `prefetch.batchSize`). */
const batchSize = Number(process.env.EDL_BENCH_BATCH ?? 4096);
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

function readSyncPass(path) {
  return measure(async () => {
    const reader = RecordIOReader.openSync(path);
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
    reader.close();
    return { records, check };
  });
}

/** A master that hands out the file's records as tasks of TASK_RECORDS, then says the job is over. */
function scriptedMaster(path, total) {
  let next = 0;
  let id = 0;
  return {
    async getTask() {
      if (next >= total) return { jobFinished: true, jobError: '' };
      const start = next;
      next = Math.min(total, next + TASK_RECORDS);
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

function feedPass(path, total, mode, threads) {
  return measure(async () => {
    const prefetch = threads === 'off' ? false : { threads, batchSize };
    const reader = await RecordIODataReader.open({ files: [path], prefetch });
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
      } else {
        for await (const record of feed.records(head)) {
          check += record.length + (record.length > 0 ? record[0] : 0);
          feed.take(1);
          records += 1;
        }
      }
    }
    await reader.close();
    return { records, check };
  });
}

function readerPass(path, total, threads) {
  return measure(async () => {
    const reader = await RecordIODataReader.open({ files: [path], prefetch: { threads, batchSize } });
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
    await reader.close();
    return { records, check };
  });
}

function best(results) {
  const checks = new Set(results.map((r) => `${r.records}/${r.check}`));
  if (checks.size !== 1) throw new Error(`passes disagree on the records: ${[...checks].join(', ')}`);
  return {
    ...results[0],
    seconds: Math.min(...results.map((r) => r.seconds)),
    cpu: Math.min(...results.map((r) => r.cpu)),
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
// The worker's default reader prefetches on 2 threads; 'off' reads each task's range when it is
// asked for (RecordIOReader.batches, libuv pool), which shows the TaskFeed's own cost apart from
// the prefetcher's.
const variants = [
  ['TaskFeed.batches, 2 prefetch threads', 'batches', 2],
  ['TaskFeed.batches, 1 prefetch thread', 'batches', 1],
  ['TaskFeed.batches, prefetch off', 'batches', 'off'],
  ['TaskFeed.records, 2 prefetch threads', 'records', 2],
  ['TaskFeed.records, prefetch off', 'records', 'off'],
];
const runs = { readSync: [], ...Object.fromEntries(variants.map(([name]) => [name, []])) };
for (let k = 0; k < repeat; k++) {
  runs.readSync.push(await readSyncPass(text));
  for (const [name, mode, threads] of variants) runs[name].push(await feedPass(text, total, mode, threads));
}
const base = best(runs.readSync);
console.log(
  `text, none, ${total} records of ~100 B, tasks of ${TASK_RECORDS}, prefetch batches of ${batchSize}:`,
);
console.log(row('readSync + release (baseline)', base));
let bestBatch = 0;
for (const [name, mode] of variants) {
  const r = best(runs[name]);
  if (r.check !== base.check) throw new Error(`${name} disagrees with readSync on the records`);
  console.log(row(name, r, base));
  if (mode === 'batches') bestBatch = Math.max(bestBatch, r.records / r.cpu / (base.records / base.cpu));
}
console.log(`  best batch path / readSync per CPU-second = x${bestBatch.toFixed(2)} (goal >= 0.8)`);

for (const set of gzipSets) {
  const path = inputFile(set, 'gzip', fileBytes);
  const n = RecordIOReader.openSync(path).numRecords;
  const byThreads = { 1: [], 2: [] };
  for (let k = 0; k < repeat; k++) {
    for (const t of [1, 2]) byThreads[t].push(await readerPass(path, n, t));
  }
  const one = best(byThreads[1]);
  const two = best(byThreads[2]);
  console.log(`${set}, gzip, ${n} records through RecordIODataReader.readBatches:`);
  console.log(row('1 prefetch thread', one));
  console.log(row('2 prefetch threads', two));
  console.log(`  2 threads / 1 thread (wall) = x${(one.seconds / two.seconds).toFixed(2)} (goal >= 1.8)`);
}
console.log(`load average after ${load()}`);
