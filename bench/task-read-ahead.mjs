#!/usr/bin/env node
/**
 * Read-ahead across tasks: a worker-like consumer reads a sequence of tasks (ranges of one gzip
 * RecordIO file) through RecordIODataReader.readRecords, in minibatches with a simulated compute
 * step (a busy loop on the main thread) per minibatch, as TaskFeed does. Three ways, in the same
 * run, interleaved per pass:
 *   - direct: `prefetch: false`, each task read when it starts (reader.records(): one read ahead
 *     within the task, none across tasks): the baseline;
 *   - on demand: through the native Prefetcher, each range queued when its task starts;
 *   - read-ahead: through the Prefetcher, each task announced (`reader.prefetch(range)`) as soon as
 *     it is known: the next task while the current one is read, as TaskFeed does with readAhead.
 * Reports time to first record per task (median and max over every task but the first, which
 * nothing can read ahead of), the wait for records per
 * minibatch and its share of step time, the total, and the total less the compute actually spent
 * (a busy loop overshoots when the machine is loaded, which blurs totals), with ratios to the baseline.
 *
 * Environment: EDL_BENCH_TASKS (default 12), EDL_BENCH_TASK_RECORDS (4096 = ElasticDL's worker-pipeline experiment's 32
 * minibatches of 128), EDL_BENCH_MINIBATCH (128), EDL_BENCH_COMPUTE_MS (per minibatch, default 5),
 * EDL_BENCH_THREADS (prefetch threads, default 2), EDL_BENCH_REPEAT (passes, median kept, default 3),
 * EDL_BENCH_BYTES (input size; default 256 MiB, the file recordio-scan.mjs makes, reused).
 */
import os from 'node:os';
import { RecordIODataReader } from '@edl/data';
import { machineLine } from './lib/machine.mjs';
import { inputFile, median, spin, taskRanges } from './lib/prefetch-input.mjs';

const tasks = Number(process.env.EDL_BENCH_TASKS ?? 12);
const taskRecords = Number(process.env.EDL_BENCH_TASK_RECORDS ?? 4096);
const minibatch = Number(process.env.EDL_BENCH_MINIBATCH ?? 128);
const computeMs = Number(process.env.EDL_BENCH_COMPUTE_MS ?? 5);
const threads = Number(process.env.EDL_BENCH_THREADS ?? 2);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 28);

const WAYS = {
  direct: { prefetch: false, announce: false },
  'on demand': { prefetch: { threads }, announce: false },
  'read-ahead': { prefetch: { threads }, announce: true },
};

/** One pass over `ranges` with a fresh reader (its file index built before the clock starts). */
async function pass(path, ranges, way) {
  const reader = await RecordIODataReader.open({ files: [path], prefetch: way.prefetch });
  await reader.createShards();
  const firstRecordMs = [];
  let wait = 0;
  let compute = 0;
  let steps = 0;
  let check = 0;
  const started = performance.now();
  if (way.announce) reader.prefetch(ranges[0]);
  for (const [i, range] of ranges.entries()) {
    // TaskFeed asks for the next task while this one is read and announces it on arrival.
    if (way.announce && ranges[i + 1]) reader.prefetch(ranges[i + 1]);
    const iterator = reader.readRecords(range)[Symbol.asyncIterator]();
    const taskStart = performance.now();
    let inBatch = 0;
    let t = taskStart;
    for (;;) {
      const r = await iterator.next();
      if (r.done) break;
      if (inBatch === 0 && t === taskStart) firstRecordMs.push(performance.now() - taskStart);
      check += r.value.length + (r.value.length > 0 ? r.value[0] : 0);
      if (++inBatch === minibatch) {
        const s = performance.now();
        wait += s - t;
        spin(computeMs);
        t = performance.now();
        compute += t - s;
        steps++;
        inBatch = 0;
      }
    }
    if (inBatch > 0) {
      const s = performance.now();
      wait += s - t;
      spin(computeMs);
      compute += performance.now() - s;
      steps++;
    }
  }
  const total = performance.now() - started;
  await reader.close();
  return { total, wait, compute, steps, check, firstRecordMs };
}

const path = inputFile('image', 'gzip', fileBytes);
const { ranges: all } = await taskRanges(path, tasks * taskRecords, taskRecords);
// Tasks in a shuffled but fixed order, as a master hands out a shard's ranges across workers.
const ranges = all.map((r, i) => ({ r, k: (i * 7 + 3) % all.length })).sort((a, b) => a.k - b.k);
const taskList = ranges.map(({ r }) => ({ shardName: r.path, start: r.start, end: r.start + r.count }));

console.log(`# task read-ahead: ${machineLine()}`);
console.log(
  `# load ${os.loadavg()[0].toFixed(1)}; ${taskList.length} tasks of ${taskRecords} image records (gzip, ` +
    `~3 KiB each), minibatch ${minibatch}, compute ${computeMs} ms per minibatch, ${threads} prefetch threads, median of ${repeat}`,
);
const results = Object.fromEntries(Object.keys(WAYS).map((name) => [name, []]));
await pass(path, taskList, WAYS.direct); // warm-up: page cache, addon, JIT
for (let k = 0; k < repeat; k++) {
  for (const [name, way] of Object.entries(WAYS)) results[name].push(await pass(path, taskList, way));
}
const checks = new Set(Object.values(results).flatMap((runs) => runs.map((r) => r.check)));
if (checks.size !== 1) throw new Error(`the three ways read different records (${[...checks].join(', ')})`);

const row = (cells) => `| ${cells.join(' | ')} |`;
console.log(
  row([
    'way',
    'first record, tasks 2..n: median (ms)',
    'first record, max (ms)',
    'wait per minibatch (ms)',
    'wait share of step',
    'total (s)',
    'total vs direct',
    'total less compute (s)',
    'vs direct',
  ]),
);
console.log(row(Array(9).fill('---')));
const baseRest = median(results.direct.map((r) => r.total - r.compute));
const baseTotal = median(results.direct.map((r) => r.total));
for (const [name, runs] of Object.entries(results)) {
  const pick = (f) => median(runs.map(f));
  const total = pick((r) => r.total);
  const perStep = pick((r) => r.wait / r.steps);
  const share = pick((r) => r.wait / r.total);
  console.log(
    row([
      name,
      pick((r) => median(r.firstRecordMs.slice(1))).toFixed(2),
      pick((r) => Math.max(...r.firstRecordMs.slice(1))).toFixed(2),
      perStep.toFixed(2),
      `${(share * 100).toFixed(1)}%`,
      (total / 1000).toFixed(2),
      `x${(total / baseTotal).toFixed(3)}`,
      (pick((r) => r.total - r.compute) / 1000).toFixed(2),
      `x${(pick((r) => r.total - r.compute) / baseRest).toFixed(3)}`,
    ]),
  );
}
