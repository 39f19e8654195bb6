import { RETRY_CAUSES, type RetryCause } from './retry-policy.js';

/** Upper bounds (ms) of the request latency histogram's buckets; a last bucket holds the rest. */
export const LATENCY_BUCKETS_MS: readonly number[] = [5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10_000];

/** What {@link RemoteStats.snapshot} returns: plain data, to be exported (e.g. to `/metrics`). */
export interface RemoteStatsSnapshot {
  /** Requests sent (HEAD, GET, LIST), retries included. */
  readonly requests: number;
  /** Body bytes received by range reads (bytes skipped or dropped on a retry included). */
  readonly bytes: number;
  /** Retries by cause. */
  readonly retries: Readonly<Record<RetryCause, number>>;
  /** Reads that failed for good (after their last attempt, or with a fault not worth retrying). */
  readonly failures: number;
  /** Time from sending a request to its status line and headers (time to first byte). */
  readonly latency: {
    /** Upper bounds of the buckets in ms ({@link LATENCY_BUCKETS_MS}). */
    readonly bucketBoundsMs: readonly number[];
    /**
     * Observations per bucket, not cumulative: `counts[i]` for latencies in
     * `(bucketBoundsMs[i-1], bucketBoundsMs[i]]`, and one more entry for those above the last bound.
     */
    readonly counts: readonly number[];
    readonly count: number;
    readonly sumMs: number;
  };
}

/**
 * Counters of one or more remote byte sources (pass the same instance to several to add them up):
 * requests, bytes, retries by cause and request latency, so a user can see throttling while a job
 * runs.
 */
export class RemoteStats {
  private requests = 0;
  private bytes = 0;
  private failures = 0;
  private readonly retries: Record<RetryCause, number> = Object.fromEntries(
    RETRY_CAUSES.map((cause) => [cause, 0]),
  ) as Record<RetryCause, number>;
  private readonly latencyCounts: number[] = new Array<number>(LATENCY_BUCKETS_MS.length + 1).fill(0);
  private latencySumMs = 0;
  private latencyCount = 0;

  /** Counts one request sent. */
  recordRequest(): void {
    this.requests++;
  }

  /** Counts `count` body bytes received. */
  recordBytes(count: number): void {
    this.bytes += count;
  }

  /** Counts one retry for `cause`. */
  recordRetry(cause: RetryCause): void {
    this.retries[cause]++;
  }

  /** Counts one read that failed for good. */
  recordFailure(): void {
    this.failures++;
  }

  /** Adds one request latency (ms from sending to the answer's headers) to the histogram. */
  recordLatency(ms: number): void {
    let bucket = LATENCY_BUCKETS_MS.findIndex((bound) => ms <= bound);
    if (bucket < 0) bucket = LATENCY_BUCKETS_MS.length;
    this.latencyCounts[bucket] = (this.latencyCounts[bucket] ?? 0) + 1;
    this.latencySumMs += ms;
    this.latencyCount++;
  }

  /** The counters now, as plain data that later recording does not change. */
  snapshot(): RemoteStatsSnapshot {
    return {
      requests: this.requests,
      bytes: this.bytes,
      retries: { ...this.retries },
      failures: this.failures,
      latency: {
        bucketBoundsMs: LATENCY_BUCKETS_MS,
        counts: [...this.latencyCounts],
        count: this.latencyCount,
        sumMs: this.latencySumMs,
      },
    };
  }
}
