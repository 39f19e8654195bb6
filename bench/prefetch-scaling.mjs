#!/usr/bin/env node
/**
 * Prefetch scaling (issue 3 §4b): gzip decoding is CPU-bound, so records per second should grow
 * with prefetch threads. Reads the first EDL_BENCH_RECORDS records of the text and image gzip files
 * through a Prefetcher (batches of EDL_BENCH_BATCH records, default 1024, so that the JavaScript
 * side costs little; a consumer that only touches the records) with 0, 1, 2 and 4
 * threads; reports MB/s of record bytes, the 2-thread / 1-thread ratio (goal >= 1.7x), CPU seconds
 * of the process and the load average before and after, since the machine may be shared.
 *
 * Environment: EDL_BENCH_RECORDS (default: the whole file), EDL_BENCH_REPEAT (passes, best kept,
 * default 3), EDL_BENCH_SETS (default "text,image"), EDL_BENCH_BYTES (file size, default 256 MiB).
 */
import os from 'node:os';
import { Prefetcher } from '@edl/recordio';
import { machineLine } from './lib/machine.mjs';
import { inputFile, taskRanges, touch } from './lib/prefetch-input.mjs';

const records =
  process.env.EDL_BENCH_RECORDS === undefined ? undefined : Number(process.env.EDL_BENCH_RECORDS);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const sets = (process.env.EDL_BENCH_SETS ?? 'text,image').split(',');
const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 28);
const batchSize = Number(process.env.EDL_BENCH_BATCH ?? 1024);
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');

async function pass(ranges, threads) {
  const cpu = process.cpuUsage();
  const started = performance.now();
  const p = Prefetcher.create({ threads, batchSize });
  for (const r of ranges) p.enqueue(r);
  p.end();
  let bytes = 0;
  let check = 0;
  for await (const batch of p) {
    bytes += batch.totalBytes;
    check += touch(batch);
  }
  p.close();
  const seconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpu);
  return { seconds, bytes, check, cpu: (used.user + used.system) / 1e6 };
}

console.log(`prefetch-scaling: ${machineLine()}`);
console.log(`load average before ${load()}`);
for (const set of sets) {
  const path = inputFile(set, 'gzip', fileBytes);
  const { ranges, total } = await taskRanges(path, records, 8192);
  const threadCounts = [0, 1, 2, 4];
  const best = new Map();
  for (let k = 0; k < repeat; k++) {
    for (const threads of threadCounts) {
      const r = await pass(ranges, threads);
      const prev = best.get(threads);
      if (prev !== undefined && prev.check !== r.check)
        throw new Error('thread counts disagree on the records');
      if (prev === undefined || r.seconds < prev.seconds) best.set(threads, r);
    }
  }
  const mbps = (t) => best.get(t).bytes / best.get(t).seconds / 1e6;
  for (const threads of threadCounts) {
    const r = best.get(threads);
    console.log(
      `${set} gzip, ${total} records: threads ${threads}  ${mbps(threads).toFixed(0).padStart(5)} MB/s  ` +
        `x${(mbps(threads) / mbps(0)).toFixed(2)} of 0 threads  x${(mbps(threads) / mbps(1)).toFixed(2)} of 1 thread  ` +
        `cpu ${r.cpu.toFixed(2)} s for ${r.seconds.toFixed(2)} s wall (${(r.cpu / r.seconds).toFixed(2)} cores), ` +
        `${(r.bytes / r.cpu / 1e6).toFixed(0)} MB per CPU-second`,
    );
  }
  console.log(`${set}: 2 threads / 1 thread = x${(mbps(2) / mbps(1)).toFixed(2)} (goal >= 1.7)`);
}
console.log(`load average after ${load()}`);
