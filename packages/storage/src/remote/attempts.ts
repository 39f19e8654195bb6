import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { RemoteError, type RemoteErrorCode } from './remote-error.js';
import type { RemoteStats } from './remote-stats.js';
import {
  backoffDelayMs,
  isConnectionFailure,
  type RetryCause,
  type RetrySettings,
  statusRetryCause,
} from './retry-policy.js';

/**
 * An answer with a status that is not a success, as a source's request function reports it
 * (sources turn their client's errors into this, so retrying and error text are decided once).
 */
export class HttpStatusFailure extends Error {
  override readonly name: string = 'HttpStatusFailure';
  /**
   * @param status - the HTTP status.
   * @param serverCode - the server's error code when it sent one (S3's `SlowDown`, `NoSuchKey`, ...).
   * @param serverMessage - the server's error message when it sent one.
   */
  constructor(
    readonly status: number,
    readonly serverCode: string | undefined,
    readonly serverMessage: string | undefined,
  ) {
    super(`HTTP ${status}${serverCode === undefined ? '' : ` ${serverCode}`}`);
  }

  /** `403 InvalidAccessKeyId: The AWS Access Key Id ...`, as error details quote the answer. */
  describe(): string {
    const code = this.serverCode === undefined ? '' : ` ${this.serverCode}`;
    const message =
      this.serverMessage === undefined || this.serverMessage === '' ? '' : `: ${this.serverMessage}`;
    return `${this.status}${code}${message}`;
  }
}

/** Thrown by an attempt whose body ended before its range did. */
class ShortBody extends Error {
  override readonly name: string = 'ShortBody';
}

/** Why this module aborted an attempt itself: its reason object, told apart from a caller's abort. */
class AttemptAbort extends Error {
  override readonly name: string = 'AttemptAbort';
  constructor(readonly retryCause: RetryCause) {
    super(`attempt abandoned: ${retryCause}`);
  }
}

/** One remote operation: what it reads, how it retries, where it counts. */
export interface RemoteCall {
  /** The object's URL as errors show it ({@link displayUrl}). */
  readonly url: string;
  readonly settings: RetrySettings;
  readonly stats: RemoteStats;
  /** The caller's abort signal: aborting it ends the call at once, with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** What the call does, for the error of a call that gives up (`stat`, `list`, `read`). */
  readonly action: string;
}

/**
 * A body that can be written straight into memory the caller owns (the S3 source's own
 * connections read a socket into it), instead of handing over pieces to copy.
 */
export interface DirectBody {
  /**
   * Fills `into` from the body, calling `progress` with each count of bytes written; resolves
   * when `into` is full or the body has ended, rejects when the body fails or is destroyed.
   */
  readInto(into: Uint8Array, progress: (count: number) => void): Promise<void>;
}

function isDirectBody(body: unknown): body is DirectBody {
  return typeof (body as Partial<DirectBody>).readInto === 'function';
}

/** An answer to a range request: its body and where in the object the body starts. */
export interface RangeAnswer {
  /**
   * The body's pieces, in order: a Node.js stream (node:http's answer, as the AWS SDK gives it) is
   * read from its `data` events, anything else by async iteration (a fetch body).
   */
  readonly body: AsyncIterable<Uint8Array> | Readable;
  /** Byte of the object the body starts at: the offset asked, or 0 from a server that ignored Range. */
  readonly start: number;
  /** Ends the body (a stalled one is abandoned through this; pending reads then reject). */
  cancel(reason: Error): void;
}

/** Sends one range request for `[offset, offset + length)`; rejects with {@link HttpStatusFailure} on a failed status. */
export type RangeRequester = (offset: number, length: number, signal: AbortSignal) => Promise<RangeAnswer>;

/**
 * Runs `attempt` until it succeeds, retrying throttling, 5xx, connection failures and timeouts with
 * exponential backoff and full jitter, at most `settings.maxAttempts` times. Each attempt gets a
 * signal that the per-request timeout (or the caller's signal) aborts. Failures not worth retrying,
 * and the last failure, surface as a {@link RemoteError} naming the URL.
 */
export async function withRetries<T>(
  call: RemoteCall,
  attempt: (signal: AbortSignal, timeouts: AttemptTimeouts) => Promise<T>,
  where: { readonly offset?: number; readonly length?: number } = {},
): Promise<T> {
  call.signal?.throwIfAborted();
  for (let attemptNumber = 1; ; attemptNumber++) {
    const timeouts = new AttemptTimeouts(call);
    try {
      return await attempt(timeouts.signal, timeouts);
    } catch (error) {
      if (call.signal?.aborted) throw call.signal.reason;
      const cause = timeouts.abandonedFor() ?? retryCauseOf(error);
      if (cause === undefined || attemptNumber >= call.settings.maxAttempts) {
        call.stats.recordFailure();
        throw finalError(call, error, cause, attemptNumber, where);
      }
      call.stats.recordRetry(cause);
    } finally {
      timeouts.clear();
    }
    await sleep(backoffDelayMs(call.settings, attemptNumber), undefined, { signal: call.signal });
  }
}

/**
 * Reads `[offset, offset + length)` into `into` through `request`, retrying as {@link withRetries}
 * does. A broken or stalled body is resumed from the first byte not yet received: the bytes already
 * in `into` are kept, and the retry asks only for the rest.
 */
export async function readRangeWithRetries(
  call: RemoteCall,
  offset: number,
  length: number,
  into: Uint8Array,
  request: RangeRequester,
): Promise<Uint8Array> {
  let received = 0;
  await withRetries(
    call,
    async (signal, timeouts) => {
      const answer = await timeouts.untilAnswer(() => request(offset + received, length - received, signal));
      timeouts.watchBody((reason) => answer.cancel(reason));
      let skip = offset + received - answer.start;
      if (skip < 0)
        throw new RemoteError('BAD_RESPONSE', `the server answered from byte ${answer.start}`, call);
      const rangeAnswered = skip === 0;
      // Each piece goes straight into `into`; true once the range is complete.
      const take = (piece: Uint8Array): boolean => {
        timeouts.bodyProgressed();
        call.stats.recordBytes(piece.byteLength);
        let data = piece;
        if (skip > 0) {
          const skipped = Math.min(skip, data.byteLength);
          skip -= skipped;
          data = data.subarray(skipped);
        }
        const count = Math.min(data.byteLength, length - received);
        into.set(count === data.byteLength ? data : data.subarray(0, count), received);
        received += count;
        return received === length;
      };
      const { body } = answer;
      if (rangeAnswered && isDirectBody(body)) {
        await body.readInto(into.subarray(received, length), (count) => {
          timeouts.bodyProgressed();
          call.stats.recordBytes(count);
          received += count;
        });
      } else if (body instanceof Readable) {
        await receive(body, take);
        // A server that ignored Range sends the rest of the object: stop it. A range answer ends here.
        if (!rangeAnswered && !body.readableEnded) answer.cancel(new Error('the range is complete'));
      } else {
        for await (const piece of body) if (take(piece)) break;
      }
      if (received < length) throw new ShortBody(`the body ended after ${received} of ${length} bytes`);
    },
    { offset, length },
  );
  return into.subarray(0, length);
}

/**
 * Hands a Node.js stream's chunks to `take` from its `data` events until `take` has all it wants
 * (true), the body ends, or it fails. Events, not `for await`: a promise per 64 KiB chunk cost a
 * quarter of the CPU of receiving a ranged GET (measured in docs/data-readers.md). A body left
 * flowing after `take` is done keeps a listener for a late error, which must not be uncaught.
 */
function receive(body: Readable, take: (piece: Uint8Array) => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const settle = (error?: unknown): void => {
      if (settled) return;
      settled = true;
      body.off('data', onData);
      body.off('end', onEnd);
      body.off('close', onEnd);
      body.off('error', onError);
      body.on('error', () => {});
      if (error === undefined) resolve();
      else reject(error);
    };
    const onData = (piece: Uint8Array): void => {
      try {
        if (take(piece)) settle();
      } catch (error) {
        body.destroy();
        settle(error);
      }
    };
    const onEnd = (): void => settle();
    const onError = (error: Error): void => settle(error);
    body.on('data', onData);
    body.on('end', onEnd);
    body.on('close', onEnd);
    body.on('error', onError);
  });
}

/**
 * The timers of one attempt: the per-request timeout until the answer's headers, then the stall
 * detector while its body arrives. Either one aborts the attempt's signal with its cause.
 */
export class AttemptTimeouts {
  private readonly controller = new AbortController();
  private readonly unlink: () => void;
  private timer: NodeJS.Timeout | undefined;
  private cancelBody: ((reason: Error) => void) | undefined;

  constructor(private readonly call: RemoteCall) {
    const forward = (): void => this.controller.abort(call.signal?.reason);
    call.signal?.addEventListener('abort', forward, { once: true });
    this.unlink = () => call.signal?.removeEventListener('abort', forward);
  }

  /** Aborted by a timeout of this attempt or by the caller. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Sends a request under the per-request timeout, counting it and its latency. */
  async untilAnswer<T>(send: () => Promise<T>): Promise<T> {
    this.call.stats.recordRequest();
    const started = performance.now();
    this.arm(this.call.settings.requestTimeoutMs, 'timeout');
    try {
      const answer = await send();
      this.call.stats.recordLatency(performance.now() - started);
      return answer;
    } finally {
      this.disarm();
    }
  }

  /** Starts the stall detector of a body; `cancel` ends the body when it stalls. */
  watchBody(cancel: (reason: Error) => void): void {
    this.cancelBody = cancel;
    this.arm(this.call.settings.stallTimeoutMs, 'stalled-body');
  }

  /** A piece of the body arrived: the stall detector starts over. */
  bodyProgressed(): void {
    this.timer?.refresh();
  }

  /** The cause this attempt was abandoned for by one of its timers, if it was. */
  abandonedFor(): RetryCause | undefined {
    const reason: unknown = this.controller.signal.reason;
    return reason instanceof AttemptAbort ? reason.retryCause : undefined;
  }

  /** Stops the timers and forgets the caller's signal. */
  clear(): void {
    this.disarm();
    this.unlink();
  }

  private arm(ms: number, cause: RetryCause): void {
    this.disarm();
    this.timer = setTimeout(() => {
      const reason = new AttemptAbort(cause);
      this.controller.abort(reason);
      this.cancelBody?.(reason);
    }, ms);
  }

  private disarm(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

function retryCauseOf(error: unknown): RetryCause | undefined {
  if (error instanceof HttpStatusFailure) return statusRetryCause(error.status);
  if (error instanceof ShortBody) return 'short-body';
  if (error instanceof RemoteError) return undefined;
  return isConnectionFailure(error) ? 'connection-reset' : undefined;
}

const STATUS_CODES: ReadonlyMap<number, RemoteErrorCode> = new Map([
  [401, 'ACCESS_DENIED'],
  [403, 'ACCESS_DENIED'],
  [404, 'NOT_FOUND'],
  [412, 'CHANGED'],
  [416, 'OUT_OF_RANGE'],
]);

function finalError(
  call: RemoteCall,
  error: unknown,
  cause: RetryCause | undefined,
  attempts: number,
  where: { readonly offset?: number; readonly length?: number },
): unknown {
  if (error instanceof RemoteError) {
    // Raised inside a range attempt, which knows the object but not the range the caller asked for.
    if (error.offset !== undefined || where.offset === undefined) return error;
    return new RemoteError(error.code, error.detail, {
      ...where,
      url: error.url,
      status: error.status,
      cause: error.cause,
    });
  }
  const location = { url: call.url, ...where, cause: error };
  if (cause !== undefined) {
    const last = error instanceof HttpStatusFailure ? error.describe() : faultText(error, cause);
    return new RemoteError(
      'UNAVAILABLE',
      `${call.action} gave up after ${attempts} attempts; last: ${last}`,
      {
        ...location,
        status: error instanceof HttpStatusFailure ? error.status : undefined,
      },
    );
  }
  if (error instanceof HttpStatusFailure) {
    const code = STATUS_CODES.get(error.status) ?? 'BAD_RESPONSE';
    const detail =
      code === 'CHANGED'
        ? `the object changed since it was stat'ed (${error.describe()}); restart from a fresh listing`
        : code === 'ACCESS_DENIED'
          ? `${call.action} failed: ${error.describe()}; check the credentials, region and permissions`
          : `${call.action} failed: ${error.describe()}`;
    return new RemoteError(code, detail, { ...location, status: error.status });
  }
  return new RemoteError('UNAVAILABLE', `${call.action} failed: ${errorChainText(error)}`, location);
}

function faultText(error: unknown, cause: RetryCause): string {
  if (cause === 'timeout' || cause === 'stalled-body') return cause;
  return `${cause} (${errorChainText(error)})`;
}

/** `fetch failed: getaddrinfo ENOTFOUND host`: an error's message and its causes', on one line. */
function errorChainText(error: unknown): string {
  const parts: string[] = [];
  for (let current = error, depth = 0; current !== undefined && depth < 4; depth++) {
    if (!(current instanceof Error)) {
      parts.push(String(current));
      break;
    }
    parts.push(current.message);
    current = current.cause;
  }
  return parts.join(': ');
}
