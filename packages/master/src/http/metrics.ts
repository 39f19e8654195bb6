import type { JobStatusTracker } from '../job-status.js';
import type { Master } from '../master.js';
import { DataPipelineMetrics, type DataPipelineRow } from './data-pipeline-metrics.js';
import {
  type Family,
  HistogramCounts,
  PROMETHEUS_CONTENT_TYPE,
  type Sample,
  writePrometheusText,
} from './prometheus-text.js';
import { StorageMetrics, type StorageTotals } from './storage-metrics.js';

/** Buckets of `edl_step_seconds`: 1 ms to 30 s. */
const STEP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The job's metrics as a scrape sees them. */
export interface JobMetrics {
  /** The Content-Type of {@link JobMetrics.metrics}' text. */
  readonly contentType: string;
  /** Prometheus text exposition of every metric now, each sample labelled with `job_id`. */
  metrics(): string;
  /** Object-storage reads summed over the workers, per URL scheme, for the live view. */
  storageTotals?(): StorageTotals[];
  /** Each worker's data pipeline tuner: budgets, `'auto'` settings and measured rates, for the live view. */
  dataPipelines?(): DataPipelineRow[];
}

/**
 * The job's Prometheus metrics: counters and gauges read the master and the tracker when scraped;
 * the step-time histogram counts every step from the start. packages/master/README.md documents
 * each metric.
 */
export function createJobMetrics(master: Master, tracker: JobStatusTracker): JobMetrics {
  const steps = new HistogramCounts(STEP_BUCKETS);
  tracker.onStepSeconds((worker, seconds, n) => steps.observe({ worker }, seconds, n));
  const storage = new StorageMetrics(master);
  const dataPipelines = new DataPipelineMetrics(master);
  const families = (): Family[] => {
    const status = tracker.snapshot();
    const records = status.job.records;
    const histogram = master.gradientOutcomes.stalenessHistogram;
    const loss = tracker.lastLoss;
    const evaluation = master.evaluation.results.at(-1);
    const byLabel = (label: string, values: Record<string, number>): Sample[] =>
      Object.entries(values).map(([name, value]) => ({ labels: { [label]: name }, value }));
    return [
      {
        name: 'edl_records_total',
        help: 'Records done exactly once, by task kind (training counts every epoch)',
        type: 'counter',
        samples: (['training', 'evaluation', 'prediction'] as const).map((kind) => ({
          labels: { kind },
          value: records[kind].done,
        })),
      },
      {
        name: 'edl_tasks',
        help: 'Tasks by state: todo and doing now; done and failed (failed attempts) so far',
        type: 'gauge',
        samples: byLabel('state', tracker.taskTotals()),
      },
      {
        name: 'edl_workers',
        help: 'Worker processes by state (starting, running, lost, exited)',
        type: 'gauge',
        samples: byLabel('state', tracker.workerCounts()),
      },
      {
        name: 'edl_model_version',
        help: 'Version of the model in the parameter store',
        type: 'gauge',
        samples: [{ value: master.store.version }],
      },
      {
        name: 'edl_loss',
        help: 'Mean training loss of the steps in the latest heartbeat window of any worker',
        type: 'gauge',
        samples: loss === null ? [] : [{ value: loss }],
      },
      {
        name: 'edl_evaluation_metric',
        help: 'Metrics of the latest evaluation round',
        type: 'gauge',
        samples: evaluation === undefined ? [] : byLabel('metric', evaluation.metrics),
      },
      {
        name: 'edl_step_seconds',
        help: 'Training step time (compute_loss + report_gradient) per worker: the mean of each heartbeat window, once per step',
        type: 'histogram',
        buckets: steps.buckets,
        samples: steps.samples(),
      },
      {
        name: 'edl_gradients_total',
        help: 'Gradient reports by outcome: applied, stale (computed on an old model version), rejected (range refused)',
        type: 'counter',
        samples: byLabel('outcome', tracker.gradients),
      },
      {
        name: 'edl_gradient_staleness_total',
        help: 'Applied gradients by staleness: how many model versions old they were (the last bucket: that many or more)',
        type: 'counter',
        samples: histogram.map((value, s) => ({
          labels: { versions: s === histogram.length - 1 ? `${s}+` : String(s) },
          value,
        })),
      },
      {
        name: 'edl_gradients_mirrored_total',
        help: 'Applied gradients that their worker mirrored on its replica of the model: answered with a checksum, not the model',
        type: 'counter',
        samples: [{ value: master.gradientOutcomes.mirrored }],
      },
      {
        name: 'edl_worker_relaunches_total',
        help: 'Worker processes started to replace a lost one',
        type: 'counter',
        samples: [{ value: tracker.workerRelaunches }],
      },
      ...storage.families(),
      ...dataPipelines.families(),
    ];
  };
  return {
    contentType: PROMETHEUS_CONTENT_TYPE,
    metrics: () => writePrometheusText(families(), { job_id: tracker.jobId }),
    storageTotals: () => storage.totals(),
    dataPipelines: () => dataPipelines.rows(),
  };
}
