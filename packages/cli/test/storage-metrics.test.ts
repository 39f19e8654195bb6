/**
 * Object-storage counters on /metrics and the live view: a real master serving HTTP and real
 * `edl worker` processes training MNIST from RecordIO objects in a real s3rver process. The workers
 * send their S3 byte source's counters with their heartbeats; /metrics must show them as the
 * `edl_storage_*` families while the job runs, /api/status as the storage totals, and the page
 * (in headless chromium) as its storage line.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDataReader } from '@edl/data';
import { type MasterHandle, silentLogger, startMaster } from '@edl/master';
import { writeMnistRecordIO } from '@edl/model-zoo';
import { fromWorkerStatsMessage, toWorkerStatsMessage } from '@edl/proto';
import { configureS3, RemoteStats } from '@edl/storage';
import puppeteer from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  S3RVER_CREDENTIALS,
  type S3rverProcess,
  startS3rver,
} from '../../storage/test/support/s3rver-process.js';
import { remoteStorageStats, toStorageStatsReport } from '../src/job/storage-stats.js';
import { type PrometheusSample, parsePrometheus } from './helpers/prometheus-text.js';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const METRICS_TOKEN = 'scrape-storage';
const JOB_TOKEN = 'storage-job-token';

function select(
  samples: readonly PrometheusSample[],
  name: string,
  labels: Record<string, string>,
): PrometheusSample[] {
  return samples.filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
}

describe('remote byte-source counters on the wire', () => {
  it('carries RemoteStats through the heartbeat message unchanged, latency in seconds', () => {
    const stats = new RemoteStats();
    for (let i = 0; i < 3; i++) stats.recordRequest();
    stats.recordBytes(4096);
    stats.recordRetry('throttled');
    stats.recordRetry('throttled');
    stats.recordRetry('stalled-body');
    stats.recordFailure();
    stats.recordLatency(7);
    stats.recordLatency(40_000);
    const report = toStorageStatsReport('s3', stats.snapshot());
    expect(report.latency.boundsSeconds[0]).toBe(0.005);
    expect(report.latency.counts.length).toBe(report.latency.boundsSeconds.length + 1);
    expect(report.latency.sumSeconds).toBeCloseTo(40.007, 9);
    const live = {
      backend: 'cpu',
      steps: 1,
      records: { training: 2, evaluation: 0, prediction: 0 },
      lossSteps: 0,
      elapsedSeconds: 1,
      timerSeconds: {},
      storage: [report],
    };
    const wire = toWorkerStatsMessage(live);
    const back = fromWorkerStatsMessage(wire).storage?.[0];
    expect(back).toEqual(report);
    expect(back?.retries).toMatchObject({ throttled: 2, 'stalled-body': 1, timeout: 0 });
    expect(back?.latency.counts[1]).toBe(1); // 7 ms: in (5, 10]
    expect(back?.latency.counts.at(-1)).toBe(1); // 40 s: above the last bound
    // A histogram whose counts do not fit its bounds is refused, naming the source.
    const broken = { ...live, storage: [{ ...report, latency: { ...report.latency, counts: [1] } }] };
    expect(() => toWorkerStatsMessage(broken)).toThrow(/latency counts for storage\[s3\]/);
  });
});

describe('remoteStorageStats', () => {
  it('reports one source per remote scheme among the origins, none for local files or a table', async () => {
    const stats = await remoteStorageStats([
      undefined,
      '/data/train.rio',
      'file:///data/valid.rio',
      'postgres://edl@127.0.0.1:5432/edl',
      's3://bucket/train/',
      's3://bucket/valid/',
      'https://data.example/test.rio',
    ]);
    expect(stats().map((report) => report.scheme)).toEqual(['s3', 'https']);
    // A table origin is no error: it has no byte source, so no counters.
    const local = await remoteStorageStats(['/data/train.rio', 'postgres://edl@127.0.0.1/edl']);
    expect(local()).toEqual([]);
  });
});

describe('edl_storage_* while workers read from s3rver', () => {
  let dir: string;
  let s3: S3rverProcess;
  let handle: MasterHandle;

  beforeAll(async () => {
    if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm run build:ts' first`);
    dir = await mkdtemp(path.join(tmpdir(), 'edl-storage-metrics-'));
    s3 = await startS3rver();
    await s3.createBucket('data');
    const files = await writeMnistRecordIO({ dir, trainRecords: 1200, testRecords: 100, trainFiles: 2 });
    const trainDir = path.dirname(files.train.files[0]?.path as string);
    for (const name of readdirSync(trainDir)) {
      const bytes = readFileSync(path.join(trainDir, name));
      await s3.put('data', `mnist/${name}`, bytes);
    }
    configureS3({ endpoint: s3.endpoint, credentials: S3RVER_CREDENTIALS });
    const origin = 's3://data/mnist/';
    const workerArgs = [edl, 'worker', '--model-def', 'mnist', '--training-data', origin];
    workerArgs.push('--backend', 'cpu', '--minibatch-size', '32', '--s3-endpoint', s3.endpoint);
    handle = await startMaster({
      jobType: 'training',
      trainingReader: await createDataReader(origin, { remote: { indexCacheDir: path.join(dir, 'index') } }),
      minibatchSize: 32,
      numMinibatchesPerTask: 4,
      // More epochs than the test waits for: it stops the job once the counters are seen.
      numEpochs: 200,
      parameterStore: { optimizer: { type: 'sgd', learningRate: 0.05 } },
      logger: silentLogger,
      jobId: 'storage-metrics',
      token: JOB_TOKEN,
      http: { metricsToken: METRICS_TOKEN },
      workers: {
        command: process.execPath,
        args: workerArgs,
        numWorkers: 2,
        onOutput: () => {},
        env: {
          AWS_ACCESS_KEY_ID: S3RVER_CREDENTIALS.accessKeyId,
          AWS_SECRET_ACCESS_KEY: S3RVER_CREDENTIALS.secretAccessKey,
          AWS_REGION: 'us-east-1',
        },
      },
    });
  }, 120_000);

  afterAll(async () => {
    await handle?.stop();
    configureS3({});
    await s3?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('shows requests, bytes, retries by cause and request latency per worker, and totals on /api/status', async () => {
    const origin = handle.liveView?.origin as string;
    let parsed: ReturnType<typeof parsePrometheus> | undefined;
    // Heartbeats come every 2 s: wait for one from each worker after its first reads.
    for (;;) {
      const response = await fetch(`${origin}/metrics`, {
        headers: { authorization: `Bearer ${METRICS_TOKEN}` },
      });
      expect(response.status).toBe(200);
      const sample = parsePrometheus(await response.text());
      const reading = select(sample.samples, 'edl_storage_bytes_total', { scheme: 's3' }).filter(
        (s) => s.value > 0,
      );
      if (reading.length === 2) {
        parsed = sample;
        break;
      }
      if (handle.master.status().state !== 'running')
        throw new Error('the job ended before both workers read from S3');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(parsed.types.get('edl_storage_requests_total')).toBe('counter');
    expect(parsed.types.get('edl_storage_bytes_total')).toBe('counter');
    expect(parsed.types.get('edl_storage_retries_total')).toBe('counter');
    expect(parsed.types.get('edl_storage_failures_total')).toBe('counter');
    expect(parsed.types.get('edl_storage_request_seconds')).toBe('histogram');
    for (const worker of ['worker-0', 'worker-1']) {
      const labels = { worker, scheme: 's3', job_id: 'storage-metrics' };
      const requests = select(parsed.samples, 'edl_storage_requests_total', labels)[0]?.value ?? 0;
      const bytes = select(parsed.samples, 'edl_storage_bytes_total', labels)[0]?.value ?? 0;
      expect(requests).toBeGreaterThan(0);
      expect(bytes).toBeGreaterThan(0);
      // s3rver answers every request at once: no retries of any cause.
      const retries = select(parsed.samples, 'edl_storage_retries_total', labels);
      expect(retries.map((s) => s.labels.cause).sort()).toEqual([
        'connection-reset',
        'server-error',
        'short-body',
        'stalled-body',
        'throttled',
        'timeout',
      ]);
      expect(retries.every((s) => s.value === 0)).toBe(true);
      // No sidecar indexes were uploaded: each data object's `.idx` probe answers 404, a read that
      // fails for good, and nothing else fails.
      const failures = select(parsed.samples, 'edl_storage_failures_total', labels)[0]?.value;
      expect(failures).toBeGreaterThanOrEqual(0);
      expect(failures).toBeLessThanOrEqual(2);
      // The histogram: cumulative buckets ending at +Inf = count, one observation per answered request.
      const buckets = select(parsed.samples, 'edl_storage_request_seconds_bucket', labels);
      expect(buckets.at(-1)?.labels.le).toBe('+Inf');
      for (let i = 1; i < buckets.length; i++) {
        expect(buckets[i]?.value).toBeGreaterThanOrEqual(buckets[i - 1]?.value as number);
      }
      const count = select(parsed.samples, 'edl_storage_request_seconds_count', labels)[0]?.value ?? 0;
      expect(buckets.at(-1)?.value).toBe(count);
      expect(count).toBeGreaterThan(0);
      expect(count).toBeLessThanOrEqual(requests);
      expect(select(parsed.samples, 'edl_storage_request_seconds_sum', labels)[0]?.value).toBeGreaterThan(0);
    }
    const status = (await (
      await fetch(`${origin}/api/status`, { headers: { authorization: `Bearer ${JOB_TOKEN}` } })
    ).json()) as {
      storage: Array<{ scheme: string; requests: number; bytes: number; meanLatencySeconds: number }>;
    };
    const s3Totals = status.storage.find((t) => t.scheme === 's3');
    expect(s3Totals?.requests).toBeGreaterThan(0);
    expect(s3Totals?.bytes).toBeGreaterThan(0);
    expect(s3Totals?.meanLatencySeconds).toBeGreaterThan(0);
    // The page's storage line, in Debian's headless chromium: shown once a worker reads from S3.
    const browser = await puppeteer.launch({
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
    });
    try {
      const page = await browser.newPage();
      await page.goto(`${origin}/?token=${JOB_TOKEN}`, { waitUntil: 'load' });
      // Page-side code as strings: the tests are type-checked without the DOM library.
      await page.waitForFunction(
        `/^s3: [\\d,]+ \\/ /.test(document.getElementById('storage').textContent) && !document.getElementById('storage-card').hidden`,
        { timeout: 30_000 },
      );
      const line = (await page.evaluate(`document.getElementById('storage').textContent`)) as string;
      // requests / bytes / retries (throttled) / mean latency: s3rver throttles nothing.
      expect(line).toMatch(/^s3: [\d,]+ \/ [\d.,]+ (B|MiB|GiB) \/ 0 \(0\) \/ \d+ ms/);
    } finally {
      await browser.close();
    }
  }, 120_000);
});
