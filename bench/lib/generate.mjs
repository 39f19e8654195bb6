/**
 * Deterministic bench inputs: ~3 KiB image-like records (smooth gradients plus noise, like raw
 * pixels) and ~100-byte text records (sentences over a fixed vocabulary). Records are drawn from a
 * seeded pool (image records stamped with their index), so files are reproducible.
 */
import { existsSync, mkdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { mulberry32 } from '@edl/common';

function imagePool(rand, count) {
  const pool = [];
  for (let k = 0; k < count; k++) {
    const r = Buffer.allocUnsafe(3072);
    const a = Math.floor(rand() * 8);
    const b = Math.floor(rand() * 8);
    const c = Math.floor(rand() * 256);
    for (let y = 0; y < 32; y++) {
      for (let x = 0; x < 32; x++) {
        for (let ch = 0; ch < 3; ch++) {
          r[(y * 32 + x) * 3 + ch] = (a * x + b * y + c + ch * 40 + Math.floor(rand() * 12)) & 255;
        }
      }
    }
    pool.push(r);
  }
  return pool;
}

function textPool(rand, count) {
  const letters = 'etaoinshrdlucmfwypvbgkjqxz';
  const vocabulary = Array.from({ length: 2000 }, () => {
    let w = '';
    const n = 2 + Math.floor(rand() * 8);
    for (let i = 0; i < n; i++) w += letters[Math.floor(rand() * rand() * letters.length)];
    return w;
  });
  const pool = [];
  for (let k = 0; k < count; k++) {
    const target = 60 + Math.floor(rand() * 70);
    let s = '';
    while (s.length < target) {
      const word = vocabulary[Math.floor(rand() * rand() * vocabulary.length)];
      s += s === '' ? word[0].toUpperCase() + word.slice(1) : ` ${word}`;
    }
    pool.push(Buffer.from(`${s}.`));
  }
  return pool;
}

/** The two record sets of the scan benchmark. */
export const RECORD_SETS = {
  image: { label: '3 KiB image-like', pool: (rand) => imagePool(rand, 4096) },
  text: { label: '~100 B text', pool: (rand) => textPool(rand, 65536) },
};

/**
 * Writes `path` (once; cached) with about `targetBytes` of record bytes of `set`, in batches of
 * ~4 MiB through writeBatch. Written to a temporary name first, so an interrupted run leaves no
 * half file in the cache.
 */
export function ensureFile(RecordIOWriter, path, set, compressor, targetBytes, log) {
  if (existsSync(path)) return statSync(path).size;
  mkdirSync(dirname(path), { recursive: true });
  const rand = mulberry32(set === 'image' ? 1 : 2);
  const pool = RECORD_SETS[set].pool(rand);
  const tmp = `${path}.partial`;
  rmSync(tmp, { force: true });
  const writer = RecordIOWriter.createSync(tmp, { compressor });
  const started = performance.now();
  const batchBytes = 4 << 20;
  let written = 0;
  let index = 0;
  while (written < targetBytes) {
    const data = Buffer.allocUnsafe(batchBytes + 4096);
    const bounds = [];
    let at = 0;
    while (at < batchBytes && written + at < targetBytes) {
      const src = pool[Math.floor(rand() * pool.length)];
      src.copy(data, at);
      // Stamp image records with their index so no two are identical (text keeps its words).
      if (set === 'image') data.writeUInt32LE(index++ >>> 0, at);
      bounds.push(at, at + src.length);
      at += src.length;
    }
    writer.writeBatch({ data, bounds: Uint32Array.from(bounds) });
    written += at;
    // Progress: redrawn in place on a terminal, every 256 MiB in a log file.
    if (log && (process.stderr.isTTY || written % (256 << 20) < batchBytes)) {
      log(
        `${process.stderr.isTTY ? '\r' : ''}  generating ${path}: ${(written / 2 ** 20).toFixed(0)} MiB${process.stderr.isTTY ? '' : '\n'}`,
      );
    }
  }
  writer.close();
  renameSync(tmp, path);
  if (log) log(` in ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return statSync(path).size;
}

/**
 * Writes `count` TFRecord files of ~3 KiB image-like records into `dir`, `totalBytes` of records in
 * all (once: a `done` file marks a complete set).
 */
export async function ensureTFRecords(TFRecordWriter, dir, count, totalBytes) {
  if (existsSync(join(dir, 'done'))) return;
  mkdirSync(dir, { recursive: true });
  const rand = mulberry32(3);
  const pool = RECORD_SETS.image.pool(rand);
  for (let file = 0; file < count; file++) {
    const writer = TFRecordWriter.create(join(dir, `part-${String(file).padStart(5, '0')}.tfrecord`));
    for (let written = 0; written < totalBytes / count; ) {
      const record = pool[Math.floor(rand() * pool.length)];
      writer.write(record);
      written += record.length;
    }
    await writer.close();
  }
  writeFileSync(join(dir, 'done'), '');
}
