import type { ByteSource, ObjectStat, ReadRangeOptions } from '../byte-source.js';
import type { RangeAnswer, RemoteCall } from './attempts.js';
import { readRangeWithRetries } from './attempts.js';
import { checkRange } from './range.js';
import { RemoteStats } from './remote-stats.js';
import { type RetryOptions, type RetrySettings, retrySettings } from './retry-policy.js';

/** Options every remote source takes: retries, timeouts, and the counters it adds to. */
export interface RemoteSourceOptions extends RetryOptions {
  /** Counters to add this source's requests to (default: a new {@link RemoteStats}). */
  readonly stats?: RemoteStats;
}

/** Where one ranged read goes: the URL errors name, and how to ask for a part of the range. */
export interface RangeRequest {
  /** The object's URL as errors and counters show it (never with credentials). */
  readonly url: string;
  /** Asks for bytes `[start, start + count)`; a retry asks again for the part not yet received. */
  readonly send: (start: number, count: number, signal: AbortSignal) => Promise<RangeAnswer>;
}

/**
 * What the remote sources (S3, HTTP) share: retry settings and counters, the range checks of
 * {@link ByteSource.readRange}, and the retrying read of a range that resumes a broken body where it
 * broke. A subclass says only how to address the object and ask for part of it.
 */
export abstract class RemoteByteSource implements ByteSource {
  abstract readonly scheme: string;
  /** This source's request, byte, retry and latency counters. */
  readonly stats: RemoteStats;
  protected readonly settings: RetrySettings;

  protected constructor(options: RemoteSourceOptions) {
    this.settings = retrySettings(options);
    this.stats = options.stats ?? new RemoteStats();
  }

  abstract list(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat[]>;
  abstract stat(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat>;

  async readRange(
    object: ObjectStat,
    offset: number,
    length: number,
    options: ReadRangeOptions = {},
  ): Promise<Uint8Array> {
    const into = checkRange(object, offset, length, options.into);
    if (length === 0) return into;
    const request = await this.rangeRequest(object);
    const call = this.call(request.url, 'read', options.signal);
    return readRangeWithRetries(call, offset, length, into, request.send);
  }

  /** Always `undefined`: remote objects are read through {@link readRange}. */
  localPath(): string | undefined {
    return undefined;
  }

  /** How to ask for parts of `object`, pinned to the version it was stat'ed at. */
  protected abstract rangeRequest(object: ObjectStat): Promise<RangeRequest>;

  /** One operation's retry context, counted in {@link stats}. */
  protected call(url: string, action: string, signal: AbortSignal | undefined): RemoteCall {
    return { url, action, signal, settings: this.settings, stats: this.stats };
  }
}
