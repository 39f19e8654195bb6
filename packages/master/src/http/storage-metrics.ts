import type { StorageStatsReport } from '@edl/proto';
import type { Master } from '../master.js';
import { LatestPerWorker } from './latest-per-worker.js';
import type { Family, HistogramSample, Sample } from './prometheus-text.js';

/** What the live view shows of object-storage reads: the sums over every worker, per scheme. */
export interface StorageTotals {
  readonly scheme: string;
  readonly requests: number;
  readonly bytes: number;
  /** Retries by cause (throttled, server-error, connection-reset, timeout, stalled-body, short-body). */
  readonly retries: Readonly<Record<string, number>>;
  readonly failures: number;
  /** Mean request latency (time to first byte) in seconds; 0 before the first request. */
  readonly meanLatencySeconds: number;
}

/**
 * Keeps the latest remote byte-source counters of every worker, from their heartbeats, and writes
 * them as the `edl_storage_*` Prometheus families and the live view's storage line. The counters are
 * cumulative per worker process, so a lost worker's last values stay in the totals.
 */
export class StorageMetrics {
  readonly #byWorker: LatestPerWorker<readonly StorageStatsReport[]>;

  constructor(master: Master) {
    this.#byWorker = new LatestPerWorker(master, (stats) => stats.storage);
  }

  /** Stops listening to the master. */
  close(): void {
    this.#byWorker.close();
  }

  /** The `edl_storage_*` families: requests, bytes, retries by cause, failures, request latency. */
  families(): Family[] {
    const rows = this.#byWorker
      .entries()
      .flatMap(([worker, sources]) =>
        sources.map((stats) => ({ labels: { worker, scheme: stats.scheme }, stats })),
      );
    const counter = (value: (stats: StorageStatsReport) => number): Sample[] =>
      rows.map(({ labels, stats }) => ({ labels, value: value(stats) }));
    const bounds = rows[0]?.stats.latency.boundsSeconds ?? [];
    // Every worker of a job runs the same build, so the same buckets; a report with others is left out
    // rather than written under buckets it was not counted in.
    const latency: HistogramSample[] = rows
      .filter(({ stats }) => sameNumbers(stats.latency.boundsSeconds, bounds))
      .map(({ labels, stats }) => ({
        labels,
        cumulative: cumulativeCounts(stats.latency.counts).slice(0, bounds.length),
        sum: stats.latency.sumSeconds,
        count: stats.latency.counts.reduce((a, b) => a + b, 0),
      }));
    return [
      {
        name: 'edl_storage_requests_total',
        help: 'Requests sent to object storage or HTTP(S) (HEAD, GET, LIST), retries included, per worker and URL scheme',
        type: 'counter',
        samples: counter((stats) => stats.requests),
      },
      {
        name: 'edl_storage_bytes_total',
        help: 'Body bytes received by ranged reads from object storage or HTTP(S), per worker and URL scheme',
        type: 'counter',
        samples: counter((stats) => stats.bytes),
      },
      {
        name: 'edl_storage_retries_total',
        help: 'Requests retried, by cause: throttled (429, 503 SlowDown), server-error, connection-reset, timeout, stalled-body, short-body',
        type: 'counter',
        samples: rows.flatMap(({ labels, stats }) =>
          Object.entries(stats.retries).map(([cause, value]) => ({ labels: { ...labels, cause }, value })),
        ),
      },
      {
        name: 'edl_storage_failures_total',
        help: 'Requests to object storage or HTTP(S) that failed for good: after their last retry, or not worth retrying (a missing object, such as an absent sidecar index, counts)',
        type: 'counter',
        samples: counter((stats) => stats.failures),
      },
      {
        name: 'edl_storage_request_seconds',
        help: 'Time from sending a request to object storage or HTTP(S) to its status line and headers',
        type: 'histogram',
        buckets: bounds,
        samples: latency,
      },
    ];
  }

  /** Sums over every worker, one entry per URL scheme, for the live view. */
  totals(): StorageTotals[] {
    const byScheme = new Map<
      string,
      { totals: Omit<StorageTotals, 'meanLatencySeconds'>; sum: number; count: number }
    >();
    for (const sources of this.#byWorker.values()) {
      for (const stats of sources) {
        const entry = byScheme.get(stats.scheme) ?? {
          totals: { scheme: stats.scheme, requests: 0, bytes: 0, retries: {}, failures: 0 },
          sum: 0,
          count: 0,
        };
        const retries: Record<string, number> = { ...entry.totals.retries };
        for (const [cause, n] of Object.entries(stats.retries)) retries[cause] = (retries[cause] ?? 0) + n;
        entry.totals = {
          scheme: stats.scheme,
          requests: entry.totals.requests + stats.requests,
          bytes: entry.totals.bytes + stats.bytes,
          retries,
          failures: entry.totals.failures + stats.failures,
        };
        entry.sum += stats.latency.sumSeconds;
        entry.count += stats.latency.counts.reduce((a, b) => a + b, 0);
        byScheme.set(stats.scheme, entry);
      }
    }
    return [...byScheme.values()].map(({ totals, sum, count }) => ({
      ...totals,
      meanLatencySeconds: count === 0 ? 0 : sum / count,
    }));
  }
}

function cumulativeCounts(counts: readonly number[]): number[] {
  let running = 0;
  return counts.map((n) => {
    running += n;
    return running;
  });
}

function sameNumbers(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}
