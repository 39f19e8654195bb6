/**
 * Inputs shared by the prefetch benchmarks: the generated files of recordio-scan.mjs (created here
 * when missing) cut into task-like ranges, and a consumer step that spins the main thread.
 */
import { fileURLToPath } from 'node:url';
import { RecordIOReader, RecordIOWriter } from '@edl/recordio';
import { ensureFile } from './generate.mjs';

const dataDir = fileURLToPath(new URL('../data/', import.meta.url));

/** Path of the `set`/`compressor` file of `bytes` record bytes, generated on first use. */
export function inputFile(set, compressor, bytes) {
  const path = `${dataDir}${set}-${compressor}-${bytes}.rio`;
  ensureFile(RecordIOWriter, path, set, compressor, bytes, (t) => process.stderr.write(t));
  return path;
}

/** The first `records` records of `path` (all when undefined) as ranges of `taskRecords`. */
export async function taskRanges(path, records, taskRecords) {
  const reader = await RecordIOReader.open(path);
  const total = Math.min(records ?? reader.numRecords, reader.numRecords);
  reader.close();
  const ranges = [];
  for (let start = 0; start < total; start += taskRecords) {
    ranges.push({ path, start, count: Math.min(taskRecords, total - start) });
  }
  return { ranges, total };
}

/** Busy-waits `ms` on the main thread: a stand-in for model compute of known duration. */
export function spin(ms) {
  if (ms <= 0) return;
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // spin
  }
}

/** Touches every record of a batch through its bounds (length sum and first bytes). */
export function touch(batch) {
  const { data, bounds } = batch;
  let check = 0;
  for (let i = 0; i < bounds.length; i += 2) {
    const b = bounds[i];
    check += bounds[i + 1] - b + (bounds[i + 1] > b ? data[b] : 0);
  }
  return check;
}

export function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}
