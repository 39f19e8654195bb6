import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { JobStatusTracker } from '../job-status.js';
import type { Master } from '../master.js';

/** Buckets of `edl_step_seconds`: 1 ms to 30 s. */
const STEP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The job's Prometheus metrics (prom-client, in a registry of their own): gauges read the master
 * and the tracker when scraped; counters advance by what happened since the previous scrape.
 * packages/master/README.md documents each metric.
 */
export function createJobMetrics(master: Master, tracker: JobStatusTracker): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ job_id: tracker.jobId });
  const counted = new Map<string, number>();
  /** Increments `counter` (with `labels`) up to the cumulative `value` seen now. */
  const advance = (
    counter: Counter<string>,
    key: string,
    value: number,
    labels: Record<string, string> = {},
  ) => {
    const before = counted.get(key) ?? 0;
    if (value > before) {
      counter.inc(labels, value - before);
      counted.set(key, value);
    }
  };

  new Counter({
    name: 'edl_records_total',
    help: 'Records done exactly once, by task kind (training counts every epoch)',
    labelNames: ['kind'],
    registers: [registry],
    collect() {
      const records = tracker.snapshot().job.records;
      for (const kind of ['training', 'evaluation', 'prediction'] as const) {
        this.inc({ kind }, 0);
        advance(this, `records:${kind}`, records[kind].done, { kind });
      }
    },
  });
  new Gauge({
    name: 'edl_tasks',
    help: 'Tasks by state: todo and doing now; done and failed (failed attempts) so far',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      for (const [state, n] of Object.entries(tracker.taskTotals())) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'edl_workers',
    help: 'Worker processes by state (starting, running, lost, exited)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      for (const [state, n] of Object.entries(tracker.workerCounts())) this.set({ state }, n);
    },
  });
  new Gauge({
    name: 'edl_model_version',
    help: 'Version of the model in the parameter store',
    registers: [registry],
    collect() {
      this.set(master.store.version);
    },
  });
  new Gauge({
    name: 'edl_loss',
    help: 'Mean training loss of the steps in the latest heartbeat window of any worker',
    registers: [registry],
    collect() {
      const loss = tracker.lastLoss;
      if (loss !== null) this.set(loss);
    },
  });
  new Gauge({
    name: 'edl_evaluation_metric',
    help: 'Metrics of the latest evaluation round',
    labelNames: ['metric'],
    registers: [registry],
    collect() {
      const last = master.evaluation.results.at(-1);
      if (last === undefined) return;
      for (const [metric, value] of Object.entries(last.metrics)) this.set({ metric }, value);
    },
  });
  const steps = new Histogram({
    name: 'edl_step_seconds',
    help: 'Training step time (compute_loss + report_gradient) per worker: the mean of each heartbeat window, once per step',
    labelNames: ['worker'],
    buckets: STEP_BUCKETS,
    registers: [registry],
  });
  tracker.onStepSeconds((worker, seconds, n) => {
    for (let i = 0; i < n; i++) steps.observe({ worker }, seconds);
  });
  new Counter({
    name: 'edl_gradients_total',
    help: 'Gradient reports by outcome: applied, stale (computed on an old model version), rejected (range refused)',
    labelNames: ['outcome'],
    registers: [registry],
    collect() {
      for (const [outcome, n] of Object.entries(tracker.gradients)) {
        this.inc({ outcome }, 0);
        advance(this, `gradients:${outcome}`, n, { outcome });
      }
    },
  });
  new Counter({
    name: 'edl_gradient_staleness_total',
    help: 'Applied gradients by staleness: how many model versions old they were (the last bucket: that many or more)',
    labelNames: ['versions'],
    registers: [registry],
    collect() {
      const histogram = master.gradientOutcomes.stalenessHistogram;
      histogram.forEach((n, s) => {
        const versions = s === histogram.length - 1 ? `${s}+` : String(s);
        this.inc({ versions }, 0);
        advance(this, `staleness:${versions}`, n, { versions });
      });
    },
  });
  new Counter({
    name: 'edl_gradients_mirrored_total',
    help: 'Applied gradients that their worker mirrored on its replica of the model: answered with a checksum, not the model',
    registers: [registry],
    collect() {
      this.inc(0);
      advance(this, 'mirrored', master.gradientOutcomes.mirrored);
    },
  });
  new Counter({
    name: 'edl_worker_relaunches_total',
    help: 'Worker processes started to replace a lost one',
    registers: [registry],
    collect() {
      this.inc(0);
      advance(this, 'relaunches', tracker.workerRelaunches);
    },
  });
  return registry;
}
