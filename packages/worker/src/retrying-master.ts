import { MasterRpcError } from '@edl/proto';
import { silentLogger, type WorkerLogger } from './logger.js';
import { MASTER_CONNECTION_METHODS, type MasterConnection } from './master-connection.js';

/** Options of {@link withRetries}. */
export interface RetryOptions {
  /** Attempts per call, the first included (default 8). */
  readonly attempts?: number;
  /** Pause before the first retry in milliseconds; doubles per retry (default 100). */
  readonly baseDelayMs?: number;
  /** Longest pause in milliseconds (default 2000): 8 attempts wait about 6 s in all. */
  readonly maxDelayMs?: number;
  readonly logger?: WorkerLogger;
}

/** Every call but the heartbeat, which is never retried (the next one follows anyway). */
const RETRIED = MASTER_CONNECTION_METHODS.filter((m) => m !== 'heartbeat');

/**
 * Retries the calls of a master connection that fail with a retryable gRPC status (UNAVAILABLE,
 * DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED): a master restarting from its checkpoint, a lost reply.
 * Retrying is safe because the master applies a gradient or metrics range at most once
 * (ALREADY_APPLIED), keeps only the first variables offer, and takes back a task whose assignment
 * reply was lost when its lease expires. Heartbeats are not retried: the next one follows anyway.
 */
export function withRetries(master: MasterConnection, options: RetryOptions = {}): MasterConnection {
  const attempts = options.attempts ?? 8;
  const base = options.baseDelayMs ?? 100;
  const max = options.maxDelayMs ?? 2000;
  const logger = options.logger ?? silentLogger;
  const wrapped = { heartbeat: master.heartbeat.bind(master) } as Record<string, unknown>;
  for (const method of RETRIED) {
    const call = (master[method] as (...args: unknown[]) => Promise<unknown>).bind(master);
    wrapped[method] = async (...args: unknown[]) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await call(...args);
        } catch (error) {
          if (!(error instanceof MasterRpcError) || !error.retryable || attempt >= attempts) throw error;
          const delay = Math.min(max, base * 2 ** (attempt - 1));
          logger.warn('master.retry', { method, attempt, delayMs: delay, error: error.code });
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
      }
    };
  }
  return wrapped as unknown as MasterConnection;
}
