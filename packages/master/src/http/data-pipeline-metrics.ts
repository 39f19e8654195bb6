import type { DataPipelineReport, DataStageReport } from '@edl/proto';
import type { Master } from '../master.js';
import { LatestPerWorker } from './latest-per-worker.js';
import type { Family, Sample } from './prometheus-text.js';

/** One worker's data pipeline tuner as the live view shows it. */
export interface DataPipelineRow extends DataPipelineReport {
  readonly worker: string;
}

/**
 * Keeps the latest report of every worker's data pipeline tuner (the `'auto'` stages of its
 * dataset: the settings chosen, the rates measured, the budgets), from their heartbeats, and writes
 * them as the `edl_data_*` Prometheus gauges and the live view's data pipeline card.
 */
export class DataPipelineMetrics {
  readonly #byWorker: LatestPerWorker<DataPipelineReport>;

  constructor(master: Master) {
    this.#byWorker = new LatestPerWorker(master, (stats) => stats.dataPipeline);
  }

  /** Stops listening to the master. */
  close(): void {
    this.#byWorker.close();
  }

  /** Per worker, for the live view. */
  rows(): DataPipelineRow[] {
    return this.#byWorker.entries().map(([worker, report]) => ({ worker, ...report }));
  }

  /** The `edl_data_*` gauges: budgets, modelled bytes, and per stage its settings and rates. */
  families(): Family[] {
    const workers = this.#byWorker.entries();
    const perWorker = (value: (report: DataPipelineReport) => number): Sample[] =>
      workers.map(([worker, report]) => ({ labels: { worker }, value: value(report) }));
    // A pipeline may have two stages of one name (two prefetches): the position tells them apart.
    const stages = workers.flatMap(([worker, report]) =>
      report.stages.map((stage, i) => ({
        labels: { worker, stage: stage.label, position: String(i) },
        stage,
      })),
    );
    const perStage = (value: (stage: DataStageReport) => number): Sample[] =>
      stages.map(({ labels, stage }) => ({ labels, value: value(stage) }));
    const gauge = (name: string, help: string, samples: Sample[]): Family => ({
      name,
      help,
      type: 'gauge',
      samples,
    });
    return [
      gauge(
        'edl_data_ram_budget_bytes',
        "Bytes the worker's 'auto' data pipeline stages may hold (its share of --data-ram-budget)",
        perWorker((r) => r.ramBudgetBytes),
      ),
      gauge(
        'edl_data_cpu_budget_threads',
        "Threads the worker's 'auto' data pipeline stages may run together",
        perWorker((r) => r.cpuBudget),
      ),
      gauge(
        'edl_data_modelled_bytes',
        "Bytes the worker's 'auto' stages hold under their settings, as its tuner models them",
        perWorker((r) => r.modelledBytes),
      ),
      gauge(
        'edl_data_stage_parallelism',
        "Threads an 'auto' data pipeline stage runs (1 for a prefetch), as its tuner set them",
        perStage((s) => s.parallelism),
      ),
      gauge(
        'edl_data_stage_buffer_size',
        "Elements an 'auto' data pipeline stage buffers or has in flight at most, as its tuner set them",
        perStage((s) => s.bufferSize),
      ),
      gauge(
        'edl_data_stage_elements_per_second',
        "Measured rates of an 'auto' stage: side=input (its parent's reads), work (its own work on one thread), consumer (what its consumer asks for)",
        stages.flatMap(({ labels, stage }) => [
          { labels: { ...labels, side: 'input' }, value: stage.inputPerSecond },
          { labels: { ...labels, side: 'work' }, value: stage.workPerSecond },
          { labels: { ...labels, side: 'consumer' }, value: stage.consumerPerSecond },
        ]),
      ),
      gauge(
        'edl_data_stage_element_bytes',
        "Estimated bytes of an element an 'auto' stage buffers",
        perStage((s) => s.elementBytes),
      ),
    ];
  }
}
