#!/usr/bin/env node
/**
 * Full-scan benchmark of @edl/recordio (issue 2 §8): every record of a generated file is delivered to
 * JavaScript and touched (length summed, first byte read), for none / snappy / gzip × {3 KiB
 * image-like, ~100-byte text} records, against a plain JavaScript reader in the same run.
 *
 * Environment: EDL_BENCH_BYTES (record bytes per file, default 1 GiB), EDL_BENCH_REPEAT (passes per
 * measurement, best kept, default 3), EDL_BENCH_SETS (e.g. "text"), EDL_BENCH_COMPRESSORS (e.g.
 * "none,gzip"), EDL_BENCH_MODES (comma-separated substrings of reader names to run; the plain JS
 * reader always runs), EDL_BENCH_RECORDIO (path of another build of @edl/recordio's index.js, to
 * measure an older build in the same session; modes it lacks are left out). Inputs are generated
 * once into bench/data/ (gitignored) and reused.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ensureFile, RECORD_SETS } from './lib/generate.mjs';
import { jsScan } from './lib/js-recordio.mjs';
import { machineLine } from './lib/machine.mjs';

const dataDir = fileURLToPath(new URL('./data/', import.meta.url));
const targetBytes = Number(process.env.EDL_BENCH_BYTES ?? 2 ** 30);
const repeat = Number(process.env.EDL_BENCH_REPEAT ?? 3);
const sets = (process.env.EDL_BENCH_SETS ?? 'image,text').split(',');
const compressors = (process.env.EDL_BENCH_COMPRESSORS ?? 'none,snappy,gzip').split(',');
/** Stored bytes per native read: whole chunks, as RecordIOReader.batches() reads them. */
const READ_BYTES = 4 << 20;
const modeFilter = process.env.EDL_BENCH_MODES?.split(',').filter((m) => m !== '');
const recordioPath = process.env.EDL_BENCH_RECORDIO;
const { nativeInfo, RecordIOReader, RecordBatch, RecordIOWriter } = await import(
  recordioPath === undefined ? '@edl/recordio' : pathToFileURL(recordioPath).href
);
/** Whether this build has RecordBatch.release() (older builds do not). */
const hasRelease = typeof RecordBatch.prototype.release === 'function';

function log(text) {
  process.stderr.write(text);
}

/** Chunk-aligned [start, count) ranges of about READ_BYTES stored bytes. */
function ranges(reader) {
  const out = [];
  let start = 0;
  let bytes = 0;
  for (const chunk of reader.chunks) {
    bytes += chunk.compressedSize;
    const end = chunk.firstRecord + chunk.numRecords;
    if (bytes >= READ_BYTES || end === reader.numRecords) {
      if (end > start) out.push([start, end - start]);
      start = end;
      bytes = 0;
    }
  }
  return out;
}

/**
 * Lets the event loop turn: N-API runs the finalizers of dropped batches then, returning their
 * memory to the addon's pool. Without it a synchronous loop keeps every batch it read (RSS grows by
 * the file size per pass and fresh pages cost more than the decoding).
 */
const yieldToEventLoop = () => new Promise((resolve) => setImmediate(resolve));

/** The consumers: each returns { records, bytes, check } so every mode is seen to see the same data. */
const modes = {
  // The fast path: each batch handed back with release() once touched, so the next readSync decodes
  // into the same memory. No yielding needed: memory stays flat in a tight synchronous loop.
  'native readSync + release(), offsets': async (path) => {
    const reader = RecordIOReader.openSync(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for (const [start, count] of ranges(reader)) {
      const batch = reader.readSync(start, count);
      const { data, bounds } = batch;
      for (let i = 0; i < bounds.length; i += 2) {
        const begin = bounds[i];
        const end = bounds[i + 1];
        bytes += end - begin;
        if (end > begin) check += data[begin];
      }
      records += bounds.length / 2;
      batch.release();
    }
    reader.close();
    return { records, bytes, check };
  },
  'native readSync + release(), get(i) views': async (path) => {
    const reader = RecordIOReader.openSync(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for (const [start, count] of ranges(reader)) {
      const batch = reader.readSync(start, count);
      for (let i = 0; i < batch.length; i++) {
        const r = batch.get(i);
        bytes += r.length;
        if (r.length > 0) check += r[0];
      }
      records += batch.length;
      batch.release();
    }
    reader.close();
    return { records, bytes, check };
  },
  // The way before release() existed: drop each batch and let the event loop turn so that N-API
  // can run the finalizers of collected ones.
  'native readSync + yield, offsets': async (path) => {
    const reader = RecordIOReader.openSync(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for (const [start, count] of ranges(reader)) {
      await yieldToEventLoop();
      const { data, bounds } = reader.readSync(start, count);
      for (let i = 0; i < bounds.length; i += 2) {
        const begin = bounds[i];
        const end = bounds[i + 1];
        bytes += end - begin;
        if (end > begin) check += data[begin];
      }
      records += bounds.length / 2;
    }
    reader.close();
    return { records, bytes, check };
  },
  'native readSync + yield, get(i) views': async (path) => {
    const reader = RecordIOReader.openSync(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for (const [start, count] of ranges(reader)) {
      await yieldToEventLoop();
      const batch = reader.readSync(start, count);
      for (let i = 0; i < batch.length; i++) {
        const r = batch.get(i);
        bytes += r.length;
        if (r.length > 0) check += r[0];
      }
      records += batch.length;
    }
    reader.close();
    return { records, bytes, check };
  },
  'native batches() + release(), views': async (path) => {
    const reader = await RecordIOReader.open(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for await (const batch of reader.batches()) {
      for (let i = 0; i < batch.length; i++) {
        const r = batch.get(i);
        bytes += r.length;
        if (r.length > 0) check += r[0];
      }
      records += batch.length;
      batch.release();
    }
    reader.close();
    return { records, bytes, check };
  },
  'native batches() async, views': async (path) => {
    const reader = await RecordIOReader.open(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for await (const batch of reader.batches()) {
      for (let i = 0; i < batch.length; i++) {
        const r = batch.get(i);
        bytes += r.length;
        if (r.length > 0) check += r[0];
      }
      records += batch.length;
    }
    reader.close();
    return { records, bytes, check };
  },
  'native records() async iterator': async (path) => {
    const reader = await RecordIOReader.open(path);
    let records = 0;
    let bytes = 0;
    let check = 0;
    for await (const r of reader.records()) {
      records++;
      bytes += r.length;
      if (r.length > 0) check += r[0];
    }
    reader.close();
    return { records, bytes, check };
  },
  'plain JS reader, offsets': (path) => {
    let bytes = 0;
    let check = 0;
    const records = jsScan(path, (buf, begin, end) => {
      bytes += end - begin;
      if (end > begin) check += buf[begin];
    });
    return { records, bytes, check };
  },
  'plain JS reader, views': (path) => {
    let bytes = 0;
    let check = 0;
    const records = jsScan(path, (buf, begin, end) => {
      const r = new Uint8Array(buf.buffer, buf.byteOffset + begin, end - begin);
      bytes += r.length;
      if (r.length > 0) check += r[0];
    });
    return { records, bytes, check };
  },
};

for (const name of Object.keys(modes)) {
  const wanted =
    name.startsWith('plain') || modeFilter === undefined || modeFilter.some((m) => name.includes(m));
  if (!wanted || (!hasRelease && name.includes('release()'))) delete modes[name];
}

/** Which JS mode each native mode is compared with (same delivery: offsets or views). */
const baselineOf = (mode) =>
  mode.endsWith('offsets') ? 'plain JS reader, offsets' : 'plain JS reader, views';

/**
 * Times every mode `repeat` times, round-robin, keeping each mode's best pass: load from other
 * processes then hits all modes alike instead of whichever happened to run during a spike.
 */
async function measureAll(path, label) {
  const results = {};
  for (let pass = 0; pass < repeat; pass++) {
    for (const [name, fn] of Object.entries(modes)) {
      const cpuBefore = process.cpuUsage();
      const started = process.hrtime.bigint();
      const result = await fn(path);
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const cpu = process.cpuUsage(cpuBefore);
      const cpuSeconds = (cpu.user + cpu.system) / 1e6;
      if (results[name] === undefined || seconds < results[name].seconds) {
        results[name] = { ...result, seconds, cpuSeconds };
      }
    }
    log(`  ${label}: pass ${pass + 1}/${repeat} done\n`);
  }
  return results;
}

const info = nativeInfo();
console.log('## recordio-scan: full scan, every record delivered to JavaScript and touched');
console.log(`machine: ${machineLine()}`);
console.log(
  `addon ${info.version}, crc32=${info.crc32}, crc32c=${info.crc32c}; ${(targetBytes / 2 ** 20).toFixed(0)} MiB of record bytes per file; best of ${repeat}; one thread unless marked async${recordioPath === undefined ? '' : `; @edl/recordio from ${recordioPath}`}`,
);
console.log('');
console.log(
  'GB/s and M rec/s by wall time; GB/CPU-s = record bytes per CPU second of this process (all its threads),',
);
console.log('which other processes on a shared machine disturb less than wall time.');
console.log('');
console.log('| records | compressor | file MiB | reader | GB/s | M rec/s | vs plain JS | GB/CPU-s |');
console.log('|---|---|---:|---|---:|---:|---:|---:|');
for (const set of sets) {
  for (const compressor of compressors) {
    const path = `${dataDir}${set}-${compressor}-${targetBytes}.rio`;
    const fileBytes = ensureFile(RecordIOWriter, path, set, compressor, targetBytes, log);
    // Warm the page cache (and the JIT) before timing.
    await modes['plain JS reader, offsets'](path);
    const results = await measureAll(path, `${set}/${compressor}`);
    const reference = results['plain JS reader, offsets'];
    for (const [name, r] of Object.entries(results)) {
      if (r.records !== reference.records || r.bytes !== reference.bytes || r.check !== reference.check) {
        throw new Error(
          `${name} saw different data on ${path}: ${JSON.stringify(r)} vs ${JSON.stringify(reference)}`,
        );
      }
    }
    for (const [name, r] of Object.entries(results)) {
      const gbs = r.bytes / r.seconds / 1e9;
      const mrs = r.records / r.seconds / 1e6;
      const ratio = name.startsWith('plain')
        ? '1.00x'
        : `${(results[baselineOf(name)].seconds / r.seconds).toFixed(2)}x`;
      console.log(
        `| ${RECORD_SETS[set].label} | ${compressor} | ${(fileBytes / 2 ** 20).toFixed(0)} | ${name} | ${gbs.toFixed(2)} | ${mrs.toFixed(2)} | ${ratio} | ${(r.bytes / r.cpuSeconds / 1e9).toFixed(2)} |`,
      );
    }
  }
}
