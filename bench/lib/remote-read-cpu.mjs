#!/usr/bin/env node
/**
 * Where a remote read's CPU goes (issue 24), on small inputs: CPU-seconds of the reading process by
 * thread (main, libuv pool, V8's platform threads, threads started later such as the native
 * prefetcher's, and threads that exited) for a local read, a read from s3rver directly, one through
 * the delaying proxy, and "download whole with the S3 client, then read locally". CPU-seconds, not
 * speed: they move far less with the machine's load. Each run is a fresh lib/remote-read-child.mjs
 * with one decode thread, as bench/remote-read.mjs runs it.
 *
 * `node bench/lib/remote-read-cpu.mjs`; environment: EDL_CPU_BYTES (RecordIO file, 32 MiB; the 64
 * TFRecord objects get a quarter), EDL_CPU_SETS (`recordio,tfrecord`), EDL_CPU_MODES
 * (`local,direct,proxy,download`), EDL_CPU_REPEATS (3), EDL_CPU_LATENCY (proxy's ms, 50),
 * EDL_CPU_PROFILE_DIR (writes `--cpu-prof` profiles of the main thread there), EDL_BENCH_REMOTE
 * (the reads' `remote` options as JSON). Inputs are kept under the OS temp folder.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildLocalSidecarIndex, encodeSidecarIndex, RecordIOWriter, TFRecordWriter } from '@edl/recordio';
import { ensureFile, ensureTFRecords } from './generate.mjs';
import {
  loadS3Client,
  processCpuSeconds,
  S3RVER_ENV,
  s3Client,
  startDelayProxy,
  startS3rver,
} from './s3-bench-server.mjs';

const MIB = 2 ** 20;
const bytes = Number(process.env.EDL_CPU_BYTES ?? 32 * MIB);
const sets = (process.env.EDL_CPU_SETS ?? 'recordio,tfrecord').split(',');
const modes = (process.env.EDL_CPU_MODES ?? 'local,direct,proxy,download').split(',');
const repeats = Number(process.env.EDL_CPU_REPEATS ?? 3);
const latency = Number(process.env.EDL_CPU_LATENCY ?? 50);
const profileDir = process.env.EDL_CPU_PROFILE_DIR;
const remote = JSON.parse(process.env.EDL_BENCH_REMOTE ?? '{}');
const here = (name) => fileURLToPath(new URL(name, import.meta.url));
const dataDir = join(os.tmpdir(), `edl-remote-cpu-${bytes}`);
const BUCKET = 'cpu';

/** A preload that writes the process's CPU-seconds by thread kind to $THREAD_CPU_OUT at exit. */
const HOOK = `
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
const seconds = (path) => {
  const stat = readFileSync(path, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
};
const systemSeconds = (path) => {
  const stat = readFileSync(path, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[12]) / 100;
};
const atStart = new Set(readdirSync('/proc/self/task'));
process.on('exit', () => {
  const kinds = {};
  let live = 0;
  for (const tid of readdirSync('/proc/self/task')) {
    let cpu;
    let comm;
    try {
      cpu = seconds('/proc/self/task/' + tid + '/stat');
      comm = readFileSync('/proc/self/task/' + tid + '/comm', 'utf8').trim();
    } catch { continue; }
    const kind = Number(tid) === process.pid ? 'main' : comm === 'libuv-worker' ? 'libuv' : atStart.has(tid) ? 'v8' : 'later';
    kinds[kind] = (kinds[kind] ?? 0) + cpu;
    live += cpu;
  }
  const total = seconds('/proc/self/stat');
  kinds.exited = Math.max(0, total - live);
  kinds.total = total;
  kinds.system = systemSeconds('/proc/self/stat');
  writeFileSync(process.env.THREAD_CPU_OUT, JSON.stringify(kinds));
});
`;

async function prepare() {
  ensureFile(RecordIOWriter, join(dataDir, 'recordio', 'images.rio'), 'image', 'gzip', bytes);
  await ensureTFRecords(TFRecordWriter, join(dataDir, 'tfrecord'), 64, bytes / 4);
  for (const set of sets) {
    for (const name of dataFiles(set)) {
      const path = join(dataDir, set, name);
      if (!existsSync(`${path}.idx`)) {
        writeFileSync(`${path}.idx`, encodeSidecarIndex(await buildLocalSidecarIndex(path, set)));
      }
    }
  }
}

const dataFiles = (set) =>
  readdirSync(join(dataDir, set)).filter((name) => !name.endsWith('.idx') && name !== 'done');

async function upload(endpoint) {
  const { CreateBucketCommand, PutObjectCommand } = await loadS3Client();
  const client = await s3Client(endpoint);
  await client.send(new CreateBucketCommand({ Bucket: BUCKET }));
  for (const set of sets) {
    for (const name of readdirSync(join(dataDir, set)).filter((n) => n !== 'done')) {
      const Body = readFileSync(join(dataDir, set, name));
      await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${set}/${name}`, Body }));
    }
  }
  client.destroy();
}

function runChild(job, env, tag) {
  const out = join(os.tmpdir(), `edl-remote-cpu-threads-${process.pid}.json`);
  const hook = `data:text/javascript,${encodeURIComponent(HOOK)}`;
  const args = [
    '--import',
    hook,
    ...(process.env.EDL_CPU_NODE_ARGS ?? '').split(' ').filter((a) => a !== ''),
  ];
  if (profileDir !== undefined)
    args.push('--cpu-prof', '--cpu-prof-dir', profileDir, '--cpu-prof-name', `${tag}.cpuprofile`);
  return new Promise((resolve) => {
    const proc = spawn(process.execPath, [...args, here('./remote-read-child.mjs'), JSON.stringify(job)], {
      env: { ...process.env, ...env, UV_THREADPOOL_SIZE: '1', THREAD_CPU_OUT: out },
      stdio: ['ignore', 'pipe', process.env.EDL_CPU_NODE_ARGS ? 'pipe' : 'inherit'],
    });
    let stdout = '';
    proc.stderr?.resume();
    proc.stdout.on('data', (d) => {
      stdout += d;
    });
    proc.on('close', () => {
      if (process.env.EDL_CPU_NODE_ARGS)
        writeFileSync(join(os.tmpdir(), `edl-remote-cpu-${tag}.out`), stdout);
      const result = JSON.parse(stdout.trim().split('\n').pop());
      if (result.error !== undefined) throw new Error(`${tag}: ${result.error}`);
      resolve({ ...result, threads: JSON.parse(readFileSync(out, 'utf8')) });
    });
  });
}

await prepare();
const server = await startS3rver();
const proxy = await startDelayProxy(Number(new URL(server.endpoint).port));
proxy.latencyMs = latency;
const cacheRoot = join(os.tmpdir(), `edl-remote-cpu-cache-${process.pid}`);
let fresh = 0;
const fmt = (n) => (n ?? 0).toFixed(2).padStart(5);
try {
  await upload(server.endpoint);
  console.log(
    `load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}; ${JSON.stringify(remote)}`,
  );
  for (const set of sets) {
    const size = dataFiles(set).reduce((sum, name) => sum + statSync(join(dataDir, set, name)).size, 0);
    const type = set;
    const params = set === 'recordio' ? { prefetch: { threads: 1 } } : {};
    console.log(`${set}: ${dataFiles(set).length} file(s), ${(size / MIB).toFixed(1)} MiB`);
    for (const mode of modes) {
      for (let r = 0; r < repeats; r++) {
        const endpoint = mode === 'proxy' ? proxy.endpoint : server.endpoint;
        const env = {
          ...S3RVER_ENV,
          AWS_ENDPOINT_URL_S3: endpoint,
          EDL_INDEX_CACHE_DIR: join(cacheRoot, String(fresh++)),
        };
        const base = { type, taskRecords: 4096, params };
        const job =
          mode === 'local'
            ? { ...base, mode: 'read', origin: join(dataDir, set) }
            : mode === 'index'
              ? { ...base, params: { ...params, remote }, mode: 'index', origin: `s3://${BUCKET}/${set}/` }
              : mode === 'download'
                ? { ...base, mode: 'download', bucket: BUCKET, prefix: `${set}/`, parallel: 4 }
                : { ...base, params: { ...params, remote }, mode: 'read', origin: `s3://${BUCKET}/${set}/` };
        proxy.requests.length = 0;
        const serverBefore = processCpuSeconds(server.pid);
        const ownBefore = process.cpuUsage();
        const run = await runChild(job, env, `${set}-${mode}-${r}`);
        const own = process.cpuUsage(ownBefore);
        const serverCpu = processCpuSeconds(server.pid) - serverBefore;
        const t = run.threads;
        const requests = mode === 'proxy' ? proxy.requests.length : run.sourceRequests;
        console.log(
          `  ${mode.padEnd(8)} total ${fmt(t.total)}  main ${fmt(t.main)}  libuv ${fmt(t.libuv)}  v8 ${fmt(t.v8)}  later ${fmt(t.later)}  exited ${fmt(t.exited)} (system ${fmt(t.system)})` +
            `  | s3rver ${fmt(serverCpu)}  proxy ${fmt((own.user + own.system) / 1e6)}  requests ${String(requests).padStart(3)}  wall ${(run.totalMs / 1000).toFixed(2)} s  rss ${(run.maxRssBytes / MIB).toFixed(0)} MiB  records ${run.records}`,
        );
      }
    }
  }
} finally {
  rmSync(cacheRoot, { recursive: true, force: true });
  await proxy.close();
  await server.stop();
}
