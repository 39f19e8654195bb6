/**
 * The live job view end to end: a real master serving HTTP, real `edl worker` processes training
 * the census model, and the page loaded in Debian's headless chromium (puppeteer-core). Also the
 * token checks, the Prometheus text of /metrics and /api/status against the job's final result.
 * Needs `pnpm build` (the page and the vendored chart library are copied into dist at build time).
 * Set EDL_LIVE_VIEW_SCREENSHOT=docs/live-view.png to refresh the README's screenshot.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createDataReader } from '@edl/data';
import { type MasterHandle, silentLogger, startMaster } from '@edl/master';
import { generateCensusCsv } from '@edl/model-zoo';
import { TFRecordReader } from '@edl/recordio';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheus } from './helpers/prometheus-text.js';

const edl = fileURLToPath(new URL('../dist/bin/edl.js', import.meta.url));
const chromium = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const METRICS_TOKEN = 'scrape-me';

let dir: string;
let handle: MasterHandle;
let browser: Browser;
let page: Page;
/** /metrics while both workers train, taken as soon as they do: the job may end before a test runs. */
let whileRunning: ReturnType<typeof parsePrometheus>;
const EPOCHS = 16;
const TRAIN_ROWS = 4000;

async function metrics(token = METRICS_TOKEN) {
  const response = await fetch(`${handle.liveView?.origin}/metrics`, {
    headers: { authorization: `Bearer ${token}` },
  });
  expect(response.status).toBe(200);
  return parsePrometheus(await response.text());
}

function sampleValue(
  parsed: ReturnType<typeof parsePrometheus>,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  return parsed.samples.find(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  )?.value;
}

beforeAll(async () => {
  if (!existsSync(edl)) throw new Error(`${edl} is missing: run 'pnpm build' first`);
  if (!existsSync(chromium))
    throw new Error(`${chromium} is missing: scripts/bootstrap.sh installs chromium`);
  dir = await mkdtemp(path.join(tmpdir(), 'edl-live-'));
  const train = await generateCensusCsv({ file: path.join(dir, 'train.csv'), rows: TRAIN_ROWS, seed: 1 });
  const valid = await generateCensusCsv({ file: path.join(dir, 'valid.csv'), rows: 400, seed: 2 });
  const params = '{"header":true,"recordsPerShard":500}';
  const workerArgs = [edl, 'worker', '--model-def', 'census', '--training-data', train];
  workerArgs.push('--validation-data', valid, '--data-reader-params', params, '--backend', 'cpu');
  workerArgs.push('--minibatch-size', '32');
  browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
  page = await browser.newPage();
  await page.setViewport({ width: 1440, height: 1000 });
  handle = await startMaster({
    jobType: 'training-with-evaluation',
    trainingReader: await createDataReader(train, { header: true, recordsPerShard: 500 }),
    evaluationReader: await createDataReader(valid, { header: true, recordsPerShard: 200 }),
    minibatchSize: 32,
    numMinibatchesPerTask: 4,
    // Long enough for the page to follow a running job (mirrored async training is quick here).
    numEpochs: EPOCHS,
    evaluationSteps: 200,
    parameterStore: { optimizer: { type: 'sgd', learningRate: 0.05 } },
    logger: silentLogger,
    jobId: 'census-live',
    tensorboardDir: path.join(dir, 'tensorboard'),
    http: { metricsToken: METRICS_TOKEN },
    workers: { command: process.execPath, args: workerArgs, numWorkers: 2, onOutput: () => {} },
  });
  // Poll until both workers run and one has reported a step; the job takes seconds in all.
  for (;;) {
    const sample = await metrics();
    const stepsSeen = sampleValue(sample, 'edl_step_seconds_count', { worker: 'worker-0' }) ?? 0;
    if (sampleValue(sample, 'edl_workers', { state: 'running' }) === 2 && stepsSeen > 0) {
      whileRunning = sample;
      break;
    }
    if (handle.master.status().state !== 'running')
      throw new Error('the job ended before both workers were seen running');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await handle?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('live view of a running job', () => {
  it('answers 401 to every request without the token', async () => {
    const origin = handle.liveView?.origin as string;
    for (const route of ['/', '/api/status', '/api/events', '/static/app.js', '/metrics']) {
      const response = await fetch(`${origin}${route}`);
      expect(response.status, route).toBe(401);
      await response.body?.cancel();
    }
    const wrong = await fetch(`${origin}/api/status?token=${'0'.repeat(64)}`);
    expect(wrong.status).toBe(401);
    // The metrics token opens /metrics only.
    const status = await fetch(`${origin}/api/status`, {
      headers: { authorization: `Bearer ${METRICS_TOKEN}` },
    });
    expect(status.status).toBe(401);
    expect((await fetch(`${origin}/metrics?token=${METRICS_TOKEN}`)).status).toBe(200);
  });

  it('shows workers, task counts and a loss curve in chromium, and updates while the job runs', async () => {
    const url = handle.liveView?.url as string;
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
    await page.goto(url, { waitUntil: 'load' });
    // Two workers that heartbeat with stats, a non-empty loss series drawn by the chart.
    // (Page-side code as strings: the tests are type-checked without the DOM library.)
    await page.waitForFunction(
      `[...document.querySelectorAll('#workers tbody tr')].filter((r) => r.children[1].textContent === 'running').length === 2`,
      { timeout: 60_000 },
    );
    await page.waitForFunction('window.__edlCharts.loss.data[1].length >= 2', { timeout: 60_000 });
    const workers = await page.$$eval('#workers tbody tr', (rows) =>
      rows.map((r) => [...r.children].map((c) => c.textContent)),
    );
    expect(workers.map((w) => w[0]).sort()).toEqual(['worker-0', 'worker-1']);
    expect(workers.every((w) => w[2] === 'cpu')).toBe(true);
    const losses = (await page.evaluate('window.__edlCharts.loss.data[1]')) as number[];
    expect(losses.every((l) => Number.isFinite(l) && l > 0)).toBe(true);
    const tasks = await page.$$eval('#tasks tbody tr', (rows) =>
      rows.map((r) => [...r.children].map((c) => c.textContent)),
    );
    // The newest rounds (older ones folded into one row) and the job's totals last; on every row
    // todo + doing + done = total, as numbers on the page.
    expect(tasks.length).toBeLessThanOrEqual(6);
    expect(tasks[tasks.length - 1]?.[0]).toBe('all');
    expect(tasks.some((row) => row[0] === 'epoch 1' || /^\d+ earlier/.test(row[0] as string))).toBe(true);
    for (const row of tasks) {
      const [todo, doing, done, , total] = (row as string[]).slice(1).map((t) => Number(t.replace(/,/g, '')));
      expect((todo as number) + (doing as number) + (done as number)).toBe(total);
    }
    expect(await page.$$eval('#timing .timing-row', (rows) => rows.length)).toBe(2);
    expect(await page.$eval('#state', (el) => el.textContent)).toBe('running');

    // The page follows the job: the model version on it moves on without a reload.
    const version = await page.$eval('#version', (el) => el.textContent);
    await page.waitForFunction(
      `document.querySelector('#version').textContent !== ${JSON.stringify(version)}`,
      {
        timeout: 60_000,
      },
    );
    // The event stream is healthy: the header says nothing about reconnecting.
    expect(await page.$eval('#connection', (el) => el.textContent)).toBe('');
    const shot = process.env.EDL_LIVE_VIEW_SCREENSHOT ?? path.join(dir, 'live-view.png');
    if (process.env.EDL_LIVE_VIEW_SCREENSHOT !== undefined) {
      // Mid-job with an evaluation round on the page, for the README.
      await page.waitForFunction(`document.querySelectorAll('#evaluations tbody tr').length >= 1`, {
        timeout: 60_000,
      });
    }
    await page.screenshot({ path: shot, fullPage: true });
    expect(readFileSync(shot).subarray(1, 4).toString()).toBe('PNG');
  }, 180_000);

  it('serves Prometheus text whose counters grow', async () => {
    const first = whileRunning;
    for (const [name, type] of [
      ['edl_records_total', 'counter'],
      ['edl_tasks', 'gauge'],
      ['edl_workers', 'gauge'],
      ['edl_model_version', 'gauge'],
      ['edl_loss', 'gauge'],
      ['edl_step_seconds', 'histogram'],
      ['edl_gradients_total', 'counter'],
      ['edl_gradient_staleness_total', 'counter'],
      ['edl_worker_relaunches_total', 'counter'],
    ] as const) {
      expect(first.types.get(name), name).toBe(type);
    }
    expect(sampleValue(first, 'edl_workers', { state: 'running' })).toBe(2);
    expect(sampleValue(first, 'edl_step_seconds_count', { worker: 'worker-0' })).toBeGreaterThan(0);
    const before = sampleValue(first, 'edl_records_total', { kind: 'training' }) as number;
    const applied = sampleValue(first, 'edl_gradients_total', { outcome: 'applied' }) as number;
    await handle.wait();
    const last = await metrics();
    expect(sampleValue(last, 'edl_records_total', { kind: 'training' })).toBeGreaterThan(before);
    expect(sampleValue(last, 'edl_gradients_total', { outcome: 'applied' })).toBeGreaterThan(applied);
    expect(sampleValue(last, 'edl_model_version')).toBe(handle.master.store.version);
  }, 180_000);

  it('answers /api/status with the final job summary once the job ended', async () => {
    const result = await handle.wait();
    const response = await fetch(`${handle.liveView?.origin}/api/status`, {
      headers: { authorization: `Bearer ${handle.token}` },
    });
    const status = (await response.json()) as {
      job: Record<string, unknown> & { records: Record<string, { done: number; total: number }> };
      evaluations: unknown[];
      tasks: Array<{ label: string; todo: number; doing: number; done: number; total: number }>;
      workers: Array<{ id: string; steps: number }>;
    };
    const final = handle.master.status();
    expect(result.state).toBe('succeeded');
    expect(status.job.state).toBe(result.state);
    expect(status.job.modelVersion).toBe(result.modelVersion);
    expect(status.job.recordsDone).toBe(final.recordsDone);
    expect(status.job.recordsTotal).toBe(final.recordsTotal);
    expect(status.job.records.training).toEqual({ done: TRAIN_ROWS * EPOCHS, total: TRAIN_ROWS * EPOCHS });
    const evaluated = result.evaluations.reduce((n, e) => n + e.records, 0);
    expect(status.job.records.evaluation).toEqual({ done: evaluated, total: evaluated });
    expect(status.evaluations).toEqual(JSON.parse(JSON.stringify(result.evaluations)));
    expect(status.job.gradients).toMatchObject({ applied: result.modelVersion });
    const epochs = status.tasks.filter((t) => t.label.startsWith('epoch'));
    expect(epochs.map((t) => t.label)).toEqual(Array.from({ length: EPOCHS }, (_, i) => `epoch ${i + 1}`));
    for (const epoch of epochs) expect(epoch).toMatchObject({ todo: 0, doing: 0, done: epoch.total });
    expect(status.workers.map((w) => w.id).sort()).toEqual(['worker-0', 'worker-1']);

    // The page's task table stays short however many epochs ran: the 4 newest rounds, one row for
    // the older ones and the totals, which match the master's.
    await page.waitForFunction(`document.querySelector('#state').textContent === 'succeeded'`, {
      timeout: 30_000,
    });
    const rows = await page.$$eval('#tasks tbody tr', (trs) =>
      trs.map((r) => [...r.children].map((c) => c.textContent as string)),
    );
    const older = status.tasks.length - 4;
    expect(rows.map((r) => r[0])).toEqual([
      `${older} earlier rounds`,
      ...status.tasks.slice(older).map((t) => t.label),
      'all',
    ]);
    const totals = rows[rows.length - 1]?.slice(1).map((t) => Number(t.replace(/,/g, '')));
    const sum = (key: 'todo' | 'doing' | 'done' | 'total') => status.tasks.reduce((n, t) => n + t[key], 0);
    expect(totals).toEqual([sum('todo'), sum('doing'), sum('done'), 0, sum('total')]);
    expect(await page.$eval('#connection', (el) => el.textContent)).toBe('');
  }, 180_000);

  it('wrote TensorBoard scalars: loss, throughput and every evaluation metric', async () => {
    await handle.wait();
    const [file] = readdirSync(path.join(dir, 'tensorboard'));
    expect(file).toMatch(/^events\.out\.tfevents\./);
    const reader = await TFRecordReader.open(path.join(dir, 'tensorboard', file as string));
    const tags = new Map<string, number>();
    for await (const record of reader.records()) {
      const text = Buffer.from(record).toString('latin1');
      for (const tag of ['loss', 'records_per_second', 'eval/accuracy', 'eval/auc']) {
        if (text.includes(`${String.fromCharCode(tag.length)}${tag}`))
          tags.set(tag, (tags.get(tag) ?? 0) + 1);
      }
    }
    reader.close();
    expect(tags.get('loss')).toBeGreaterThan(1);
    expect(tags.get('records_per_second')).toBeGreaterThan(0);
    const rounds = (await handle.wait()).evaluations.length;
    expect(tags.get('eval/accuracy')).toBe(rounds);
    expect(tags.get('eval/auc')).toBe(rounds);
  });
});
