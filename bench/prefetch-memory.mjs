#!/usr/bin/env node
/**
 * Prefetch memory (issue 3 §4c): RSS while a Prefetcher reads ahead of a slow consumer must stay
 * within maxBufferedBytes plus a fixed overhead. For several budgets, reads gzip image records
 * (batches of 128, 1 ms of compute per batch so the ring stays full) and samples RSS at every
 * batch; reports the peak RSS above the level before the prefetcher started, the prefetcher's own
 * peak of buffered bytes, and a 0-thread run (no read-ahead) as the fixed-overhead baseline.
 *
 * Environment: EDL_BENCH_RECORDS (default 40000), EDL_BENCH_BYTES (file size, default 256 MiB).
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Prefetcher } from '@edl/recordio';
import { machineLine } from './lib/machine.mjs';
import { inputFile, spin, taskRanges, touch } from './lib/prefetch-input.mjs';

const records = Number(process.env.EDL_BENCH_RECORDS ?? 40000);
const fileBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 28);
const MIB = 2 ** 20;

async function run(ranges, threads, maxBufferedBytes) {
  await new Promise((r) => setTimeout(r, 100));
  const before = process.memoryUsage().rss;
  const p = Prefetcher.create({ threads, batchSize: 128, maxBufferedBytes, maxBufferedBatches: 1024 });
  for (const r of ranges) p.enqueue(r);
  p.end();
  let peak = before;
  let check = 0;
  let n = 0;
  for await (const batch of p) {
    check += touch(batch);
    spin(1);
    // With --expose-gc: batches already consumed are collected now, so RSS shows what the
    // prefetcher holds rather than how far the garbage collector lags.
    if (globalThis.gc !== undefined && ++n % 16 === 0) globalThis.gc();
    peak = Math.max(peak, process.memoryUsage().rss);
  }
  const stats = p.stats;
  p.close();
  return { growth: peak - before, peakBuffered: stats.peakBufferedBytes, check };
}

const [mode, threadsArg, budgetArg] = process.argv.slice(2);
const path = inputFile('image', 'gzip', fileBytes);
const { ranges, total } = await taskRanges(path, records, 4096);
if (mode === '--child') {
  // One measurement per process: RSS never shrinks back (allocator arenas, the addon's pool of
  // large blocks), so runs in one process would hide each other.
  const r = await run(ranges, Number(threadsArg), Number(budgetArg) * MIB);
  process.stdout.write(JSON.stringify(r));
} else {
  const measure = (threads, budget, gc) =>
    JSON.parse(
      execFileSync(
        process.execPath,
        [
          ...(gc ? ['--expose-gc'] : []),
          fileURLToPath(import.meta.url),
          '--child',
          String(threads),
          String(budget),
        ],
        {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'inherit'],
        },
      ),
    );
  console.log(`prefetch-memory: ${machineLine()}`);
  console.log(`${total} gzip image records, batches of 128, 1 ms compute per batch, one process per line`);
  for (const gc of [false, true]) {
    console.log(
      gc
        ? 'with gc() every 16 batches (--expose-gc): what the prefetcher itself holds'
        : 'ordinary garbage collection:',
    );
    const base = measure(0, 16, gc);
    console.log(
      `threads 0 (no read-ahead): peak RSS +${(base.growth / MIB).toFixed(1)} MiB: the fixed overhead (batches awaiting GC, allocator)`,
    );
    for (const budget of [8, 32, 128]) {
      for (const threads of [1, 2]) {
        const r = measure(threads, budget, gc);
        if (r.check !== base.check) throw new Error('records differ');
        const extra = (r.growth - base.growth) / MIB;
        console.log(
          `maxBufferedBytes ${String(budget).padStart(3)} MiB, threads ${threads}: peak RSS +${(r.growth / MIB).toFixed(1).padStart(6)} MiB, ` +
            `${extra.toFixed(1).padStart(6)} MiB over the 0-thread run (${((extra / budget) * 100).toFixed(0)}% of the budget), ` +
            `peak buffered ${(r.peakBuffered / MIB).toFixed(1)} MiB`,
        );
      }
    }
  }
}
