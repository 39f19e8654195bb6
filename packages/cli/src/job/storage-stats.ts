import type { StorageStatsReport } from '@edl/proto';
import { byteSourceFor, RemoteByteSource, type RemoteStatsSnapshot, schemeOf } from '@edl/storage';

/** One remote byte source's counters as a worker reports them with its heartbeats. */
export function toStorageStatsReport(scheme: string, snapshot: RemoteStatsSnapshot): StorageStatsReport {
  const { latency } = snapshot;
  return {
    scheme,
    requests: snapshot.requests,
    bytes: snapshot.bytes,
    retries: { ...snapshot.retries },
    failures: snapshot.failures,
    latency: {
      boundsSeconds: latency.bucketBoundsMs.map((ms) => ms / 1000),
      counts: [...latency.counts],
      sumSeconds: latency.sumMs / 1000,
    },
  };
}

/**
 * What a worker sends as `storageStats`: the counters of the byte source of every remote scheme
 * among `locations` (its data origins). Byte sources are one per scheme per process, so these are
 * the counters of every read the worker makes from that scheme. Local origins, and those no byte
 * source reads (a table), add nothing.
 */
export async function remoteStorageStats(
  locations: readonly (string | undefined)[],
): Promise<() => readonly StorageStatsReport[]> {
  const sources = new Map<string, RemoteByteSource>();
  for (const location of locations) {
    const scheme = location === undefined ? undefined : schemeOf(location);
    if (location === undefined || scheme === undefined || scheme === 'file' || sources.has(scheme)) continue;
    // An origin that no byte source reads (postgresql://, a custom reader's) has no counters.
    const source = await byteSourceFor(location).catch(() => undefined);
    if (source instanceof RemoteByteSource) sources.set(scheme, source);
  }
  return () => [...sources].map(([scheme, source]) => toStorageStatsReport(scheme, source.stats.snapshot()));
}
