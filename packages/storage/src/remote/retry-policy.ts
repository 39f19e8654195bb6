/** Why a request was retried; {@link RemoteStats} counts retries by these. */
export type RetryCause =
  /** 429, or 503 (S3's `SlowDown`): the server asks the client to slow down. */
  | 'throttled'
  /** 500, 502 or 504. */
  | 'server-error'
  /** The connection was reset, refused or closed under the request. */
  | 'connection-reset'
  /** No answer (status line and headers) within the per-request timeout. */
  | 'timeout'
  /** The body stopped delivering bytes for longer than the stall timeout. */
  | 'stalled-body'
  /** The body ended before the range did. */
  | 'short-body';

/** Every {@link RetryCause}, in a stable order. */
export const RETRY_CAUSES: readonly RetryCause[] = [
  'throttled',
  'server-error',
  'connection-reset',
  'timeout',
  'stalled-body',
  'short-body',
];

/** How remote reads retry and when they give up. Every field has a default. */
export interface RetryOptions {
  /** Attempts per read, the first one included (default 8). A resumed range counts each attempt. */
  readonly maxAttempts?: number;
  /** Backoff before the first retry, before jitter, in ms (default 100); it doubles per retry. */
  readonly baseDelayMs?: number;
  /** Upper bound of the backoff before jitter, in ms (default 20 000). */
  readonly maxDelayMs?: number;
  /** Time from sending a request to its status line and headers, in ms (default 30 000). */
  readonly requestTimeoutMs?: number;
  /** Longest gap between two pieces of a body before it is abandoned and the rest retried (default 30 000 ms). */
  readonly stallTimeoutMs?: number;
}

/** {@link RetryOptions} with every default filled in. */
export type RetrySettings = Required<RetryOptions>;

/** The defaults of {@link RetryOptions}. */
export const DEFAULT_RETRY_SETTINGS: RetrySettings = {
  maxAttempts: 8,
  baseDelayMs: 100,
  maxDelayMs: 20_000,
  requestTimeoutMs: 30_000,
  stallTimeoutMs: 30_000,
};

/**
 * The retry fields of `options` (an object that may hold other options too) over the defaults, each
 * checked (RangeError naming the option).
 */
export function retrySettings(options: RetryOptions = {}): RetrySettings {
  const settings: Record<string, number> = { ...DEFAULT_RETRY_SETTINGS };
  for (const name of Object.keys(DEFAULT_RETRY_SETTINGS) as (keyof RetrySettings)[]) {
    const value = options[name] ?? DEFAULT_RETRY_SETTINGS[name];
    const least = name === 'maxAttempts' ? 1 : 0;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < least) {
      throw new RangeError(`retry option ${name} must be a finite number >= ${least}, got ${value}`);
    }
    settings[name] = value;
  }
  return settings as RetrySettings;
}

/**
 * The wait before retry number `retry` (1 for the first): exponential backoff with full jitter
 * (a uniform draw in `[0, min(maxDelayMs, baseDelayMs * 2^(retry-1))]`), so many workers throttled
 * at once do not come back in step.
 */
export function backoffDelayMs(
  settings: RetrySettings,
  retry: number,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(settings.maxDelayMs, settings.baseDelayMs * 2 ** Math.max(0, retry - 1));
  return Math.floor(random() * ceiling);
}

/** The retry cause of an HTTP status, or `undefined` when a status is not worth retrying. */
export function statusRetryCause(status: number): RetryCause | undefined {
  if (status === 429 || status === 503) return 'throttled';
  if (status === 500 || status === 502 || status === 504) return 'server-error';
  return undefined;
}

const CONNECTION_ERROR_CODES: ReadonlySet<string> = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'ERR_STREAM_PREMATURE_CLOSE',
]);

/**
 * Whether `error` (or an error in its `cause` chain) is a network failure under the request: a
 * reset, refused or prematurely closed connection, as Node's http, undici (fetch) and the AWS SDK
 * report them.
 */
export function isConnectionFailure(error: unknown): boolean {
  for (let current = error, depth = 0; current instanceof Error && depth < 8; depth++) {
    const code = (current as Error & { code?: unknown }).code;
    if (typeof code === 'string' && CONNECTION_ERROR_CODES.has(code)) return true;
    if (/socket hang up|other side closed|^terminated$/i.test(current.message)) return true;
    current = current.cause;
  }
  return false;
}
