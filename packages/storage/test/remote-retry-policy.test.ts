import { describe, expect, it } from 'vitest';
import { displayUrl } from '../src/remote/remote-error.js';
import { RemoteStats } from '../src/remote/remote-stats.js';
import {
  backoffDelayMs,
  DEFAULT_RETRY_SETTINGS,
  isConnectionFailure,
  retrySettings,
  statusRetryCause,
} from '../src/remote/retry-policy.js';

describe('retry policy', () => {
  it('draws full-jitter delays under an exponential ceiling that is capped', () => {
    const settings = retrySettings({ baseDelayMs: 100, maxDelayMs: 1000 });
    expect(backoffDelayMs(settings, 1, () => 0.999)).toBe(99);
    expect(backoffDelayMs(settings, 3, () => 0.999)).toBe(399);
    expect(backoffDelayMs(settings, 10, () => 0.999)).toBe(999);
    expect(backoffDelayMs(settings, 10, () => 0)).toBe(0);
  });

  it('fills defaults, ignores other options and rejects bad values by name', () => {
    expect(retrySettings({ maxAttempts: 2, endpoint: 'x' } as never)).toEqual({
      ...DEFAULT_RETRY_SETTINGS,
      maxAttempts: 2,
    });
    expect(() => retrySettings({ maxAttempts: 0 })).toThrow(/maxAttempts/);
    expect(() => retrySettings({ stallTimeoutMs: Number.NaN })).toThrow(/stallTimeoutMs/);
  });

  it('retries throttling and 5xx but not client errors', () => {
    expect([429, 503, 500, 502, 504, 400, 403, 404, 412].map(statusRetryCause)).toEqual([
      'throttled',
      'throttled',
      'server-error',
      'server-error',
      'server-error',
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('finds connection failures in cause chains', () => {
    const reset = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    expect(isConnectionFailure(new TypeError('fetch failed', { cause: reset }))).toBe(true);
    expect(isConnectionFailure(new Error('bad XML'))).toBe(false);
  });

  it('prints URLs without credentials', () => {
    expect(displayUrl('https://u:p@host/a/b.rio?sig=1')).toBe('https://…@host/a/b.rio?…');
    expect(displayUrl('s3://bucket/key')).toBe('s3://bucket/key');
  });

  it('counts latencies into buckets', () => {
    const stats = new RemoteStats();
    stats.recordLatency(3);
    stats.recordLatency(60);
    stats.recordLatency(60_000);
    const { latency } = stats.snapshot();
    expect(latency.counts[0]).toBe(1);
    expect(latency.counts[latency.bucketBoundsMs.indexOf(100)]).toBe(1);
    expect(latency.counts.at(-1)).toBe(1);
    expect(latency.count).toBe(3);
  });
});
