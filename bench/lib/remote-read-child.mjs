/**
 * One measurement of bench/remote-read.mjs, in its own process so that its peak RSS is its own:
 * `node remote-read-child.mjs '<job JSON>'` prints one JSON line.
 *
 * Jobs: `{ mode: 'read', origin, type, taskRecords, ahead }` opens a reader on `origin` (a local
 * folder or an `s3://` prefix), cuts its shards (the index) and reads every record in tasks of
 * `taskRecords`, announcing tasks beyond the current one as a worker's TaskFeed does
 * (`wantsAnotherRangeAhead`: while the reader's read-ahead budget has room, at most `ahead` tasks;
 * one task for a local file); `mode: 'index'` stops after the shards; `mode: 'download'` first downloads
 * every object under `bucket`/`prefix` whole with the S3 client (`parallel` at once) into a temp
 * folder, then reads that folder as `read` does, and times both; `mode: 'fetch'` fetches every
 * object's bytes as the readers' byte source does and decodes none (the serving ceiling). Reads
 * write `EDL-BENCH-READ-START` and `EDL-BENCH-READ-END` lines to stderr around the reading, for
 * the bench to sample the CPU of the server and the proxy over the reading alone.
 */

import { createWriteStream, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createDataReader, wantsAnotherRangeAhead } from '@edl/data';
import { byteSourceFor } from '../../packages/storage/dist/index.js';
import { touch } from './prefetch-input.mjs';
import { loadS3Client, s3Client } from './s3-bench-server.mjs';
import { threadCpu, threadCpuSince } from './thread-cpu.mjs';

const job = JSON.parse(process.argv[2]);

/**
 * This process's peak RSS since it started: Linux's VmHWM, which belongs to this process's memory
 * alone. `resourceUsage().maxRSS` is kept across exec, so a child of a large bench process starts
 * with its parent's RSS as its own peak.
 */
function peakRssBytes() {
  try {
    const kib = /^VmHWM:\s*(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1];
    if (kib !== undefined) return Number(kib) * 1024;
  } catch {
    // Not Linux: the rusage figure is the closest there is.
  }
  return process.resourceUsage().maxRSS * 1024;
}

/** Reads every record of `origin` in tasks, the next `ahead` tasks announced. */
async function readAll(origin) {
  const params = { type: job.type, ...(job.params ?? {}) };
  const reader = await createDataReader(origin, params);
  const started = performance.now();
  const shards = await reader.createShards();
  const indexMs = performance.now() - started;
  // The process's peak before reading: the reader, its S3 client and the index build (a CSV
  // object's streaming pass) included; what reading adds is on top of it.
  const indexRssBytes = peakRssBytes();
  const index = remoteFiles(reader).map((file) => file.index);
  if (job.mode === 'index') {
    await reader.close?.();
    return { indexMs, indexRssBytes, index, files: shards.length };
  }
  // The bench samples s3rver's and the proxy's CPU at these two lines.
  process.stderr.write('EDL-BENCH-READ-START\n');
  const readCpuBefore = threadCpu();
  const tasks = [];
  for (const shard of shards) {
    for (let start = shard.start; start < shard.start + shard.count; start += job.taskRecords) {
      const end = Math.min(start + job.taskRecords, shard.start + shard.count);
      tasks.push({ shardName: shard.name, start, end });
    }
  }
  // Tasks are announced as the worker's TaskFeed announces them: each as it arrives, and, while
  // one is read, the next ones, one get_task at a time (a turn of the event loop after each), while the
  // reader wants another range ahead (`ahead` caps the tasks held: the TaskFeed's maxTasksAhead).
  let announced = 0;
  let reading = 0;
  let filling = false;
  let mostAhead = 0;
  const fill = () => {
    if (filling) return;
    filling = true;
    void (async () => {
      try {
        while (
          announced < tasks.length &&
          wantsAnotherRangeAhead(reader, announced - reading - 1, job.ahead)
        ) {
          reader.prefetch?.(tasks[announced++]);
          mostAhead = Math.max(mostAhead, announced - reading - 1);
          // As the TaskFeed does after each task it fetches ahead: the reader plans it meanwhile.
          await new Promise(setImmediate);
        }
      } finally {
        filling = false;
      }
    })();
  };
  let records = 0;
  let check = 0;
  // The memory behind the largest batch (decoded records, or the fetched piece they view).
  let largestBatchBytes = 0;
  for (let i = 0; i < tasks.length; i++) {
    reading = i;
    if (announced <= i) reader.prefetch?.(tasks[announced++]);
    fill();
    if (reader.readBatches !== undefined) {
      for await (const batch of reader.readBatches(tasks[i])) {
        records += batch.length;
        check += touch(batch);
        largestBatchBytes = Math.max(
          largestBatchBytes,
          batch.data.buffer.byteLength + batch.bounds.byteLength,
        );
        batch.release?.();
      }
    } else {
      for await (const record of reader.readRecords(tasks[i])) {
        records++;
        check += typeof record === 'string' ? record.length : 1;
      }
    }
  }
  const readMs = performance.now() - started - indexMs;
  const readCpu = threadCpuSince(readCpuBefore);
  process.stderr.write('EDL-BENCH-READ-END\n');
  const remote = reader.remoteStats;
  const files = remoteFiles(reader);
  await reader.close?.();
  return {
    indexMs,
    indexRssBytes,
    readMs,
    readCpu,
    records,
    check,
    tasks: tasks.length,
    files: shards.length,
    index,
    dataBytes: files.reduce((sum, file) => sum + file.dataBytes, 0),
    dataRequests: files.reduce((sum, file) => sum + file.dataRequests, 0),
    peakBufferedBytes: remote?.peakBufferedBytes ?? 0,
    mostAhead,
    largestBatchBytes,
  };
}

/** The per-file remote stats of a reader: the file readers list them, the text reader has one. */
function remoteFiles(reader) {
  const stats = reader.remoteStats;
  if (stats === undefined) return [];
  return 'files' in stats ? stats.files : [stats];
}

/** Downloads every object under the prefix whole, `parallel` at once; returns the folder. */
async function download() {
  const { GetObjectCommand, ListObjectsV2Command } = await loadS3Client();
  const client = await s3Client(process.env.AWS_ENDPOINT_URL_S3);
  const folder = mkdtempSync(join(tmpdir(), 'edl-bench-download-'));
  const keys = [];
  let token;
  do {
    const page = await client.send(
      new ListObjectsV2Command({ Bucket: job.bucket, Prefix: job.prefix, ContinuationToken: token }),
    );
    for (const entry of page.Contents ?? []) if (!entry.Key.endsWith('.idx')) keys.push(entry.Key);
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
  let next = 0;
  const worker = async () => {
    while (next < keys.length) {
      const key = keys[next++];
      const answer = await client.send(new GetObjectCommand({ Bucket: job.bucket, Key: key }));
      await pipeline(answer.Body, createWriteStream(join(folder, key.slice(job.prefix.length))));
    }
  };
  await Promise.all(Array.from({ length: Math.min(job.parallel, keys.length) }, worker));
  client.destroy();
  return folder;
}

/**
 * Fetches every data object under `job.origin` (sidecars apart) in ranged GETs of `partBytes`
 * through the S3 byte source the readers use, decoding nothing: at most `maxInFlight` GETs and
 * `readAheadBytes` in flight (the reader's defaults), each received into a buffer kept for the
 * next. What no reader with those settings can beat on this machine: the serving ceiling.
 */
async function fetchOnly() {
  const MIB = 2 ** 20;
  const remote = job.params?.remote ?? {};
  const partBytes = remote.partBytes ?? 8 * MIB;
  const maxInFlight = remote.maxInFlight ?? 64;
  const budget = remote.readAheadBytes ?? 64 * MIB;
  const source = await byteSourceFor(job.origin);
  const objects = await source.list(job.origin);
  const parts = [];
  for (const object of objects) {
    for (let offset = 0; offset < object.size; offset += partBytes) {
      parts.push({ object, offset, length: Math.min(partBytes, object.size - offset) });
    }
  }
  process.stderr.write('EDL-BENCH-READ-START\n');
  const cpuBefore = threadCpu();
  const started = performance.now();
  let next = 0;
  let inFlightBytes = 0;
  let bytes = 0;
  const waiting = [];
  const slot = async () => {
    let buffer = new Uint8Array(0);
    while (next < parts.length) {
      const part = parts[next++];
      // Within the budget, as the reader's read-ahead (one part whatever its size).
      while (inFlightBytes > 0 && inFlightBytes + part.length > budget)
        await new Promise((wake) => waiting.push(wake));
      inFlightBytes += part.length;
      if (buffer.byteLength < part.length) buffer = new Uint8Array(part.length);
      try {
        bytes += (
          await source.readRange(part.object, part.offset, part.length, {
            into: buffer.subarray(0, part.length),
          })
        ).byteLength;
      } finally {
        inFlightBytes -= part.length;
        for (const wake of waiting.splice(0)) wake();
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(maxInFlight, parts.length) }, slot));
  const readMs = performance.now() - started;
  const readCpu = threadCpuSince(cpuBefore);
  process.stderr.write('EDL-BENCH-READ-END\n');
  return { readMs, readCpu, bytes, gets: parts.length };
}

/** The job's result, with the process's time, CPU, peak RSS and S3 byte source counters. */
async function run() {
  const started = performance.now();
  let result;
  if (job.mode === 'download') {
    const folder = await download();
    const downloadMs = performance.now() - started;
    result = { downloadMs, ...(await readAll(job.local === undefined ? folder : join(folder, job.local))) };
    rmSync(folder, { recursive: true, force: true });
  } else if (job.mode === 'fetch') {
    result = await fetchOnly();
  } else {
    result = await readAll(job.origin);
  }
  const totalMs = performance.now() - started;
  const cpu = process.cpuUsage();
  const s3 = job.origin?.startsWith('s3://') ? (await byteSourceFor(job.origin)).stats.snapshot() : undefined;
  return {
    ...result,
    totalMs,
    cpuSeconds: (cpu.user + cpu.system) / 1e6,
    maxRssBytes: peakRssBytes(),
    sourceRequests: s3?.requests ?? 0,
    sourceBytes: s3?.bytes ?? 0,
  };
}

// A failed read is a result too (the bench prints it): one line, the error's code and message.
const result = await run().catch((error) => {
  const code = error.code ?? error.name;
  return { error: error.message.startsWith(`${code}:`) ? error.message : `${code}: ${error.message}` };
});
process.stdout.write(`${JSON.stringify(result)}\n`);
