#!/usr/bin/env node
/**
 * get_batch (issue 3 §4a): batches of 64 and 128 records delivered to a JavaScript consumer by a
 * Prefetcher with 0 (decode on demand, on the main thread: the baseline), 1 and 2 threads; once
 * with a consumer that does nothing but touch the records, once with a simulated compute step of
 * EDL_BENCH_COMPUTE_MS (busy loop on the main thread). Reports the wait per batch (time spent in
 * `await prefetcher.next()`), its share of step time, and the ratio of total time to the 0-thread
 * baseline of the same run. Also compares the two ways of waking the consumer (ThreadSafeFunction
 * vs one AsyncWorker per pull).
 *
 * Environment: EDL_BENCH_RECORDS (records per measurement, default 25600), EDL_BENCH_REPEAT
 * (passes, median kept, default 3), EDL_BENCH_COMPUTE_MS (default 2), EDL_BENCH_COMPRESSORS
 * (default "snappy,gzip"), EDL_BENCH_BYTES (input file size, default 256 MiB: reuses
 * recordio-scan's files when present).
 */
import os from 'node:os';
import { nativeInfo, Prefetcher } from '@edl/recordio';
import { machineLine } from './lib/machine.mjs';
import { inputFile, median, spin, taskRanges, touch } from './lib/prefetch-input.mjs';

const records = Number(process.env.EDL_BENCH_RECORDS ?? 25600);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const computeMs = Number(process.env.EDL_BENCH_COMPUTE_MS ?? 2);
const compressors = (process.env.EDL_BENCH_COMPRESSORS ?? 'snappy,gzip').split(',');
const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 28);

/** One pass: every batch of `ranges` through a fresh prefetcher. */
async function pass(ranges, threads, batchSize, compute, wakeup) {
  const p = Prefetcher.create({ threads, batchSize, wakeup });
  for (const r of ranges) p.enqueue(r);
  p.end();
  let wait = 0;
  let batches = 0;
  let check = 0;
  const started = performance.now();
  for (;;) {
    const t = performance.now();
    const r = await p.next();
    wait += performance.now() - t;
    if (r.done) break;
    batches++;
    check += touch(r.value);
    spin(compute);
  }
  const total = performance.now() - started;
  p.close();
  return { total, wait, batches, check };
}

/**
 * Cost of one `next()` when a batch is already waiting (the ring was filled first): the price of
 * handing a batch over with each wake-up, without decoding in the way. Median over the batches.
 */
async function readyCost(path, wakeup) {
  const p = Prefetcher.create({
    threads: 2,
    batchSize: 64,
    wakeup,
    maxBufferedBatches: 256,
    maxBufferedBytes: 2 ** 28,
  });
  p.enqueue({ path, start: 0, count: 64 * 200 });
  p.end();
  while (p.stats.bufferedBatches < 200) await new Promise((r) => setTimeout(r, 20));
  const costs = [];
  for (;;) {
    const t = performance.now();
    const r = await p.next();
    costs.push(performance.now() - t);
    if (r.done) break;
  }
  p.close();
  return median(costs) * 1000;
}

async function main() {
  console.log(`get-batch: ${machineLine()}`);
  console.log(
    `load average ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; addon ${nativeInfo().version}`,
  );
  console.log(
    `${records} records (3 KiB image-like) per measurement, median of ${repeat}; compute ${computeMs} ms/batch\n`,
  );
  const rows = [];
  for (const compressor of compressors) {
    const path = inputFile('image', compressor, fileBytes);
    const { ranges, total } = await taskRanges(path, records, 4096);
    for (const batchSize of [64, 128]) {
      for (const compute of [0, computeMs]) {
        const configs = [
          [0, 'notify'],
          [1, 'notify'],
          [2, 'notify'],
          [1, 'worker'],
          [2, 'worker'],
        ];
        const results = new Map(configs.map((c) => [c.join('/'), []]));
        for (let k = 0; k < repeat; k++) {
          for (const [threads, wakeup] of configs) {
            results.get(`${threads}/${wakeup}`).push(await pass(ranges, threads, batchSize, compute, wakeup));
          }
        }
        const checks = new Set([...results.values()].flat().map((r) => r.check));
        if (checks.size !== 1) throw new Error('prefetchers disagree on the records delivered');
        let baseline;
        for (const [threads, wakeup] of configs) {
          const rs = results.get(`${threads}/${wakeup}`);
          const totalMs = median(rs.map((r) => r.total));
          const waitMs = median(rs.map((r) => r.wait));
          const batches = rs[0].batches;
          baseline ??= totalMs;
          const row = {
            compressor,
            batchSize,
            compute,
            threads,
            wakeup,
            waitUs: (waitMs / batches) * 1000,
            stepUs: (totalMs / batches) * 1000,
            waitShare: waitMs / totalMs,
            recordsPerSec: total / (totalMs / 1000),
            vsBaseline: totalMs / baseline,
          };
          rows.push(row);
          console.log(
            `${compressor.padEnd(6)} batch ${String(batchSize).padStart(3)} compute ${compute} ms  threads ${threads} ${wakeup.padEnd(6)}  ` +
              `wait/batch ${row.waitUs.toFixed(0).padStart(6)} us  step ${row.stepUs.toFixed(0).padStart(6)} us  ` +
              `wait share ${(row.waitShare * 100).toFixed(1).padStart(5)}%  ${(row.recordsPerSec / 1000).toFixed(0).padStart(5)}k rec/s  ` +
              `x${row.vsBaseline.toFixed(2)} of 0-thread time`,
          );
        }
      }
    }
  }
  const snappy = inputFile('image', 'snappy', fileBytes);
  for (let k = 0; k < 2; k++) {
    const notify = await readyCost(snappy, 'notify');
    const worker = await readyCost(snappy, 'worker');
    console.log(
      `next() with a batch ready (64 records, median): ThreadSafeFunction/tryPop ${notify.toFixed(1)} us, ` +
        `AsyncWorker per pull ${worker.toFixed(1)} us`,
    );
  }
  console.log(
    `\nload average after ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
}

await main();
