#!/usr/bin/env node
/**
 * Remote reads (issue 24 item 7): the same files read locally and through S3 (npm's s3rver, started
 * here) behind a proxy that adds 0, 10 and 50 ms to every request. Files: a gzip RecordIO file
 * (`EDL_BENCH_BYTES` of ~3 KiB image-like records, 256 MiB by default), a folder of 64 small
 * uncompressed TFRecord files and a CSV file (a quarter of that each). RecordIO and TFRecord objects
 * are uploaded twice: under `idx/` with their sidecar indexes, under `bare/` without.
 *
 * Each measurement runs in its own process (lib/remote-read-child.mjs) with one decode thread
 * (`UV_THREADPOOL_SIZE=1`, `prefetch.threads: 1`), so that the other core is left to s3rver and the
 * proxy. It reads every record in tasks of `EDL_BENCH_TASK_RECORDS`, announcing tasks beyond the
 * current one as the worker's TaskFeed does (`wantsAnotherRangeAhead`: while the reader's announced,
 * unread bytes are below `readAheadBytes`, at most `EDL_BENCH_AHEAD` tasks, the TaskFeed's
 * `maxTasksAhead`; one task for local files). Per file set and latency it prints:
 *
 * - records/s of the reading after the index is built, and its ratio to the local read of the same
 *   round (each round reads locally again, so a ratio compares reads seconds apart: on a loaded
 *   machine compare ratios, not records/s); then the ratio of the whole job, index included;
 * - the baseline: each object downloaded whole with the S3 client (4 at once), then read locally;
 *   its whole-job ratio includes the download;
 * - the serving ceiling ("fetch only"): the same objects fetched in `partBytes` GETs through the
 *   readers' S3 byte source, within the readers' in-flight and read-ahead limits, nothing decoded:
 *   the records/s no reader can pass with this server and proxy on this machine; and the reader's
 *   share of it;
 * - `local+fetch`: the local read again while a fetch-only run of the same objects goes on beside
 *   it (both started together): how fast the decoder reads when s3rver and the proxy serve, and a
 *   process receives, those bytes on the same cores, with no wait on the data;
 * - the 2-core bound of the reading's work: the reader's CPU while reading plus s3rver's and the
 *   proxy's meanwhile, over 2 cores, against the local read's time (they share the cores, so the
 *   read cannot take less);
 * - requests per data file for the index, with the sidecars (`idx/`) and without (`bare/`), as the
 *   proxy saw them (the LIST apart), and how long `createShards` took;
 * - bytes fetched / bytes used: every body byte the S3 byte source received (indexes included), and
 *   the data GETs' bytes alone, over the data files' size;
 * - the most tasks announced ahead at once, the most fetched, undecoded bytes the reader held, the
 *   reading process's peak RSS before reading (code, S3 client, index) and the RSS bound it should
 *   stay within: that peak plus `readAheadBytes` (which bounds the idle fetch buffers kept for reuse
 *   too) plus the pieces of a read in progress (one `partBytes` piece; two for CSV, the scanned one
 *   and the next) plus the largest batch decoded from one, plus, for RecordIO, two decoded buffers
 *   kept for reuse. Peak RSS is each child's VmHWM (its own memory: `maxRSS` would carry over the
 *   bench process's peak across exec);
 * - the CPU used meanwhile by the s3rver process and by this process (the proxy; it does nothing
 *   else while a child reads), as a share of one core.
 *
 * Prints the machine and the load average before and after. Environment: EDL_BENCH_BYTES,
 * EDL_BENCH_LATENCIES (`0,10,50`), EDL_BENCH_SETS (`recordio,tfrecord,csv`), EDL_BENCH_TASK_RECORDS
 * (4096), EDL_BENCH_AHEAD (16), EDL_BENCH_REMOTE (JSON `remote` options of the S3 reads, default
 * `{}`), EDL_BENCH_NODE_ARGS (Node.js flags of the reading processes, e.g. `--cpu-prof`). Inputs
 * are generated once under bench/data/remote-read/.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { mulberry32 } from '@edl/common';
import { DEFAULT_MAX_RANGES_AHEAD } from '@edl/data';
import { buildLocalSidecarIndex, encodeSidecarIndex, RecordIOWriter, TFRecordWriter } from '@edl/recordio';
import { ensureFile, ensureTFRecords } from './lib/generate.mjs';
import { machineLine } from './lib/machine.mjs';
import {
  loadS3Client,
  processCpuSeconds,
  S3RVER_ENV,
  s3Client,
  startDelayProxy,
  startS3rver,
} from './lib/s3-bench-server.mjs';

const MIB = 2 ** 20;
const bytes = Number(process.env.EDL_BENCH_BYTES ?? 256 * MIB);
const latencies = (process.env.EDL_BENCH_LATENCIES ?? '0,10,50').split(',').map(Number);
const sets = (process.env.EDL_BENCH_SETS ?? 'recordio,tfrecord,csv').split(',').filter((s) => s !== '');
const taskRecords = Number(process.env.EDL_BENCH_TASK_RECORDS ?? 4096);
/** The cap on tasks announced ahead (the TaskFeed's `maxTasksAhead`); its default when unset. */
const ahead = process.env.EDL_BENCH_AHEAD === undefined ? undefined : Number(process.env.EDL_BENCH_AHEAD);
/** `remote` options of the S3 readers (RemoteReadOptions as JSON), for trying other settings. */
const remoteOptions = JSON.parse(process.env.EDL_BENCH_REMOTE ?? '{}');
const TFRECORD_FILES = 64;
const BUCKET = 'bench';
const child = fileURLToPath(new URL('./lib/remote-read-child.mjs', import.meta.url));
const dataDir = fileURLToPath(new URL(`./data/remote-read/${bytes}/`, import.meta.url));
const load = () =>
  os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const log = (text) => process.stderr.write(text);
// The AWS SDK's own switch for its Node-version warning, as S3ByteSource sets it for users.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true';

/** Writes a CSV file of `totalBytes` (a header, an id, a label and eight numeric features per row). */
function ensureCsv(path, totalBytes) {
  if (existsSync(path)) return;
  mkdirSync(join(path, '..'), { recursive: true });
  const rand = mulberry32(4);
  const lines = ['id,label,f0,f1,f2,f3,f4,f5,f6,f7'];
  let written = 0;
  for (let id = 0; written < totalBytes; id++) {
    const features = Array.from({ length: 8 }, () => (rand() * 100).toFixed(4));
    const line = `${id},${Math.floor(rand() * 10)},${features.join(',')}`;
    lines.push(line);
    written += line.length + 1;
  }
  writeFileSync(path, `${lines.join('\n')}\n`);
}

/** The data files of a set (sidecars apart) and where they are read from. */
function layout(set) {
  const dir = join(dataDir, set);
  const files = readdirSync(dir).filter((name) => !name.endsWith('.idx') && name !== 'done');
  const size = files.reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
  const type = { recordio: 'recordio', tfrecord: 'tfrecord', csv: 'text' }[set];
  // The CSV file is one object; the other sets are folders (key prefixes).
  const local = set === 'csv' ? files[0] : undefined;
  return { dir, files, size, type, local };
}

async function prepare() {
  for (const set of sets) {
    const dir = join(dataDir, set);
    if (set === 'recordio') ensureFile(RecordIOWriter, join(dir, 'images.rio'), 'image', 'gzip', bytes, log);
    if (set === 'tfrecord') await ensureTFRecords(TFRecordWriter, dir, TFRECORD_FILES, bytes / 4);
    if (set === 'csv') ensureCsv(join(dir, 'rows.csv'), bytes / 4);
    if (set === 'csv') continue;
    for (const name of layout(set).files) {
      const path = join(dir, name);
      if (!existsSync(`${path}.idx`)) {
        writeFileSync(`${path}.idx`, encodeSidecarIndex(await buildLocalSidecarIndex(path, set)));
      }
    }
  }
}

/** Uploads each set under `idx/<set>/` (with sidecars) and `bare/<set>/` (without). */
async function upload(endpoint) {
  const { CreateBucketCommand, PutObjectCommand } = await loadS3Client();
  const client = await s3Client(endpoint);
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  for (const set of sets) {
    const { dir } = layout(set);
    for (const name of readdirSync(dir).filter((n) => n !== 'done')) {
      const body = readFileSync(join(dir, name));
      for (const prefix of name.endsWith('.idx') ? ['idx'] : ['idx', 'bare']) {
        await client.send(
          new PutObjectCommand({ Bucket: BUCKET, Key: `${prefix}/${set}/${name}`, Body: body }),
        );
      }
    }
  }
  client.destroy();
}

/**
 * Runs one child job; its JSON result, or `{ error }` with the last line it wrote to stderr.
 * `onMarker(name)` is called as the child writes `EDL-BENCH-READ-START` / `-END`.
 */
function runChild(jobSpec, env, onMarker = () => {}) {
  return new Promise((resolve) => {
    const nodeArgs = (process.env.EDL_BENCH_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
    const proc = spawn(process.execPath, [...nodeArgs, child, JSON.stringify(jobSpec)], {
      env: { ...process.env, ...env, UV_THREADPOOL_SIZE: '1' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    proc.stdout.on('data', (d) => {
      out += d;
    });
    proc.stderr.on('data', (d) => {
      err += d;
      for (const name of ['START', 'END']) {
        if (String(d).includes(`EDL-BENCH-READ-${name}\n`)) onMarker(name);
      }
    });
    proc.on('close', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      resolve(last.startsWith('{') ? JSON.parse(last) : { error: `exit ${code}: ${err.trim().slice(-300)}` });
    });
  });
}

/** Runs a child while counting the proxy's requests and the CPU of s3rver and of this process. */
async function measure(jobSpec, env, server, proxy) {
  proxy.requests.length = 0;
  const serverCpu = processCpuSeconds(server.pid);
  const ownCpu = process.cpuUsage();
  const started = performance.now();
  // s3rver's and the proxy's CPU over the reading alone (between the child's markers).
  const marks = {};
  const result = await runChild(jobSpec, env, (name) => {
    const own = process.cpuUsage();
    marks[name] = { server: processCpuSeconds(server.pid), proxy: (own.user + own.system) / 1e6 };
  });
  const wall = (performance.now() - started) / 1000;
  const own = process.cpuUsage(ownCpu);
  const during = (key) =>
    marks.START === undefined || marks.END === undefined ? Number.NaN : marks.END[key] - marks.START[key];
  return {
    ...result,
    serverReadCpu: during('server'),
    proxyReadCpu: during('proxy'),
    requests: [...proxy.requests],
    serverCpuShare: (processCpuSeconds(server.pid) - serverCpu) / wall,
    proxyCpuShare: (own.user + own.system) / 1e6 / wall,
  };
}

/** Requests per data file of an index run: LIST apart, HEAD and GET. */
function indexRequests(run, files) {
  const lists = run.requests.filter((r) => r.method === 'GET' && r.path.includes('list-type=2')).length;
  const heads = run.requests.filter((r) => r.method === 'HEAD').length;
  const gets = run.requests.filter((r) => r.method === 'GET').length - lists;
  const per = (n) => (n / files).toFixed(2);
  return `${per(heads + gets)}/file (HEAD ${per(heads)}, GET ${per(gets)}; LIST ${lists})`;
}

const fmt = (n, digits = 0) => (Number.isFinite(n) ? n.toFixed(digits) : '-');
/** Records/s of the reading alone (after the index) and of the whole job (index and download included). */
const rate = (run) => run.records / (run.readMs / 1000);
const overall = (run) => run.records / (run.totalMs / 1000);

await prepare();
console.log(`remote-read: ${machineLine()}`);
console.log(`load average before: ${load()}`);
const server = await startS3rver();
const proxy = await startDelayProxy(Number(new URL(server.endpoint).port));
try {
  log('uploading...\n');
  await upload(server.endpoint);
  console.log(
    `s3rver ${server.version} behind a delaying proxy; one decode thread; tasks of ${taskRecords} records, ` +
      `announced ahead as the worker's TaskFeed does (at most ${ahead ?? DEFAULT_MAX_RANGES_AHEAD} tasks within the read-ahead budget, one for local files); ` +
      `input ${(bytes / MIB).toFixed(0)} MiB`,
  );
  for (const set of sets) {
    const { size, files } = layout(set);
    console.log(`  ${set}: ${files.length} file(s), ${(size / MIB).toFixed(1)} MiB`);
  }
  const s3env = { ...S3RVER_ENV, AWS_ENDPOINT_URL_S3: proxy.endpoint };
  const cacheRoot = join(os.tmpdir(), `edl-bench-index-${process.pid}`);
  let fresh = 0;
  const env = () => ({ ...s3env, EDL_INDEX_CACHE_DIR: join(cacheRoot, String(fresh++)) });
  for (const latency of latencies) {
    proxy.latencyMs = latency;
    console.log(`\n+${latency} ms per request`);
    for (const set of sets) {
      const { dir, size, files, type, local } = layout(set);
      const common = {
        type,
        taskRecords,
        ahead,
        params: set === 'recordio' ? { prefetch: { threads: 1 } } : {},
      };
      const object = (prefix) => `s3://${BUCKET}/${prefix}/${set}/${local ?? ''}`;
      const localRun = await measure(
        { ...common, mode: 'read', origin: join(dir, local ?? '') },
        env(),
        server,
        proxy,
      );
      const remoteParams = { ...common.params, remote: remoteOptions };
      const remote = await measure(
        { ...common, params: remoteParams, mode: 'read', origin: object('idx') },
        env(),
        server,
        proxy,
      );
      const fetchOnly = await measure(
        { ...common, params: remoteParams, mode: 'fetch', origin: object('idx') },
        env(),
        server,
        proxy,
      );
      // The local read again while the same objects are fetched beside it (fetch only, started
      // together): the decoder's rate when the server and proxy serve those bytes on the same
      // cores and a process receives them, with no wait on the data. A remote reader whose
      // decoding waited for nothing would read about this fast.
      const [localBeside] = await Promise.all([
        runChild({ ...common, mode: 'read', origin: join(dir, local ?? '') }, env()),
        runChild({ ...common, params: remoteParams, mode: 'fetch', origin: object('idx') }, env()),
      ]);
      const download = await measure(
        { ...common, mode: 'download', bucket: BUCKET, prefix: `idx/${set}/`, local, parallel: 4 },
        env(),
        server,
        proxy,
      );
      const [base, baseOverall] = [rate(localRun), overall(localRun)];
      // Every path must deliver the local read's records: their count and a checksum of their bytes.
      for (const run of [remote, download]) {
        if (run.error === undefined && (run.records !== localRun.records || run.check !== localRun.check)) {
          run.error = `read ${run.records} records (checksum ${run.check}), the local read ${localRun.records} (${localRun.check})`;
        }
      }
      const row = (name, run, extra = '') =>
        run.error !== undefined
          ? console.log(`  ${set.padEnd(9)} ${name.padEnd(10)} n/a: ${run.error}`)
          : console.log(
              `  ${set.padEnd(9)} ${name.padEnd(10)} ${fmt(rate(run)).padStart(9)} rec/s ${fmt(rate(run) / base, 2).padStart(5)}x local` +
                `  with index${name === 'download' ? '+download' : ''} ${fmt(overall(run) / baseOverall, 2)}x` +
                `  reader CPU ${fmt(run.cpuSeconds, 2)} s (reading: main ${fmt(run.readCpu?.main, 2)}, decode ${fmt(run.readCpu?.native, 2)}, libuv ${fmt(run.readCpu?.libuv, 2)}, V8 ${fmt(run.readCpu?.v8Helpers, 2)})  peak RSS ${fmt(run.maxRssBytes / MIB).padStart(4)} MiB  s3rver ${fmt(100 * run.serverCpuShare).padStart(3)}% proxy ${fmt(100 * run.proxyCpuShare).padStart(3)}%${extra}`,
            );
      row('local', localRun);
      // The serving ceiling: the same objects fetched through the same byte source and limits,
      // nothing decoded; and the 2-core bound of the reading's own work: its CPU plus s3rver's and
      // the proxy's meanwhile, over 2 cores (and never under the local read's time).
      const readCpuSum = (run) => Object.values(run.readCpu ?? {}).reduce((sum, s) => sum + s, 0);
      const fetchRate = localRun.records / (fetchOnly.readMs / 1000);
      if (fetchOnly.error !== undefined) console.log(`  ${set.padEnd(9)} fetch only n/a: ${fetchOnly.error}`);
      else
        console.log(
          `  ${set.padEnd(9)} fetch only ${fmt(fetchRate).padStart(9)} rec/s ${fmt(fetchRate / base, 2).padStart(5)}x local  (the serving ceiling: ${fetchOnly.gets} GETs, nothing decoded)` +
            `  CPU while fetching: fetcher ${fmt(readCpuSum(fetchOnly), 2)} s, s3rver ${fmt(fetchOnly.serverReadCpu, 2)} s, proxy ${fmt(fetchOnly.proxyReadCpu, 2)} s`,
        );
      if (localBeside.error === undefined)
        console.log(
          `  ${set.padEnd(9)} local+fetch ${fmt(rate(localBeside)).padStart(8)} rec/s ${fmt(rate(localBeside) / base, 2).padStart(5)}x local  (the local read while the fetch-only run serves and receives the same bytes beside it)`,
        );
      const cpuBoundSeconds = (readCpuSum(remote) + remote.serverReadCpu + remote.proxyReadCpu) / 2;
      const localSeconds = localRun.readMs / 1000;
      const boundRatio = localSeconds / Math.max(localSeconds, cpuBoundSeconds);
      // The peak RSS to stay within (docs/data-readers.md, "Memory bound"): the reading process's
      // own peak before it reads (its code, the S3 client, the index; VmHWM, this child's alone),
      // plus the read-ahead budget (fetched, undecoded bytes and the idle fetch buffers kept for
      // reuse together), plus the pieces of the read in progress (a text read holds the piece it
      // scans and the next) and the batch decoded from one (the largest the read saw; none for
      // text), plus the two decoded buffers RemoteReads keeps for reuse (RecordIO).
      const partBytes = remoteOptions.partBytes ?? 8 * MIB;
      const rssBound =
        remote.indexRssBytes +
        (remoteOptions.readAheadBytes ?? 64 * MIB) +
        (set === 'csv' ? 2 : 1) * partBytes +
        remote.largestBatchBytes +
        (set === 'recordio' ? 2 * remote.largestBatchBytes : 0);
      row(
        's3',
        remote,
        remote.error === undefined
          ? `  ${fmt(rate(remote) / fetchRate, 2)} of the serving ceiling; CPU while reading: reader ${fmt(readCpuSum(remote), 2)} s, s3rver ${fmt(remote.serverReadCpu, 2)} s, proxy ${fmt(remote.proxyReadCpu, 2)} s, 2-core bound ${fmt(boundRatio, 2)}x local` +
              `  fetched/used ${fmt(remote.sourceBytes / size, 3)} (data GETs ${fmt(remote.dataBytes / size, 3)}, ${remote.dataRequests} GETs)` +
              `  ahead <= ${remote.mostAhead} tasks  held <= ${fmt(remote.peakBufferedBytes / MIB, 1)} MiB  RSS before reading ${fmt(remote.indexRssBytes / MIB)} MiB, bound ${fmt(rssBound / MIB)} MiB` +
              `${remote.maxRssBytes > rssBound ? ' EXCEEDED' : ''}  index ${fmt(remote.indexMs)} ms`
          : '',
      );
      row(
        'download',
        download,
        download.error === undefined ? `  (download ${fmt(download.downloadMs)} ms)` : '',
      );
      // The CSV object has no sidecar: its line index is one streaming pass.
      for (const prefix of set === 'csv' ? ['bare'] : ['idx', 'bare']) {
        const index = await measure(
          { ...common, params: remoteParams, mode: 'index', origin: object(prefix) },
          env(),
          server,
          proxy,
        );
        console.log(
          index.error !== undefined
            ? `  ${set.padEnd(9)} index ${prefix}: n/a: ${index.error}`
            : `  ${set.padEnd(9)} index ${prefix === 'idx' ? 'with sidecar   ' : 'without sidecar'} ${indexRequests(index, files.length)}` +
                `  ${fmt(index.indexMs)} ms  (${[...new Set(index.index.map((i) => i.origin))].join(', ')})`,
        );
      }
    }
  }
  rmSync(cacheRoot, { recursive: true, force: true });
} finally {
  await proxy.close();
  await server.stop();
}
console.log(`\nload average after: ${load()}`);
