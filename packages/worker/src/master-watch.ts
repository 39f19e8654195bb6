import { silentLogger, type WorkerLogger } from './logger.js';
import { MASTER_CONNECTION_METHODS, type MasterConnection } from './master-connection.js';

/** Exit status of a worker that ended because its master is gone (EX_TEMPFAIL). */
export const MASTER_GONE_EXIT_CODE = 75;

/** Options of {@link MasterWatch}. */
export interface MasterWatchOptions {
  /**
   * Process id of the master that started this worker as a local process. The worker ends when that
   * process is gone, or when the worker was handed to another parent (its parent died).
   */
  readonly masterPid?: number;
  /**
   * The worker ends when calls to the master have failed, without one success, for this many
   * milliseconds. Only failures count: a worker busy computing for a long time is not ended.
   */
  readonly leaseMs?: number;
  /** Period of the checks in milliseconds (default 250). */
  readonly checkMs?: number;
  readonly logger?: WorkerLogger;
  /** Called once when the master is gone. Default: log `master.gone` and exit with {@link MASTER_GONE_EXIT_CODE}. */
  readonly onGone?: (reason: string) => void;
  /** Clock in milliseconds (tests inject one). */
  readonly now?: () => number;
}

/**
 * Ends a worker whose master is gone, so that a SIGKILLed master leaves no workers behind: a
 * parent-death check for local workers (the master's pid, and the worker's parent pid, which changes
 * when the parent dies) and a lease on the master's side of the connection for every worker (calls
 * failing for `leaseMs`). The timer is unref'd: it never keeps a worker alive.
 */
export class MasterWatch {
  readonly #options: MasterWatchOptions;
  readonly #now: () => number;
  readonly #initialParent = process.ppid;
  #failingSince: number | undefined;
  #timer: NodeJS.Timeout | undefined;
  #gone = false;

  constructor(options: MasterWatchOptions) {
    for (const key of ['masterPid', 'leaseMs', 'checkMs'] as const) {
      const value = options[key];
      if (value !== undefined && (!Number.isSafeInteger(value) || value < 1)) {
        throw new RangeError(`Expected a positive integer for ${key} but received ${String(value)}`);
      }
    }
    this.#options = options;
    this.#now = options.now ?? Date.now;
    this.#timer = setInterval(() => this.check(), options.checkMs ?? 250);
    this.#timer.unref();
  }

  /**
   * The watch a worker process was configured for through its environment: `EDL_MASTER_PID` (set by
   * the local instance manager) and `EDL_MASTER_LEASE_MS`; undefined when neither is set (a worker
   * run in-process by a library user or a test).
   */
  static fromEnvironment(env: NodeJS.ProcessEnv, logger?: WorkerLogger): MasterWatch | undefined {
    const read = (name: string): number | undefined => {
      const text = env[name];
      if (text === undefined || text === '') return undefined;
      const value = Number(text);
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`Expected a positive integer for ${name} but received ${JSON.stringify(text)}`);
      }
      return value;
    };
    const masterPid = read('EDL_MASTER_PID');
    const leaseMs = read('EDL_MASTER_LEASE_MS');
    if (masterPid === undefined && leaseMs === undefined) return undefined;
    return new MasterWatch({
      ...(masterPid === undefined ? {} : { masterPid }),
      ...(leaseMs === undefined ? {} : { leaseMs }),
      ...(logger === undefined ? {} : { logger }),
    });
  }

  /** The same connection, with every call's outcome fed to the lease. */
  wrap(master: MasterConnection): MasterConnection {
    const wrapped: Record<string, unknown> = {};
    for (const method of MASTER_CONNECTION_METHODS) {
      if (typeof master[method] !== 'function') continue;
      const call = (master[method] as (...args: unknown[]) => Promise<unknown>).bind(master);
      wrapped[method] = async (...args: unknown[]) => {
        try {
          const result = await call(...args);
          this.#failingSince = undefined;
          return result;
        } catch (error) {
          this.#failingSince ??= this.#now();
          throw error;
        }
      };
    }
    return wrapped as unknown as MasterConnection;
  }

  /** Runs the checks now (the timer runs them every `checkMs`); true once the master is gone. */
  check(): boolean {
    if (this.#gone) return true;
    const reason = this.#goneReason();
    if (reason === undefined) return false;
    this.#gone = true;
    this.stop();
    if (this.#options.onGone) {
      this.#options.onGone(reason);
    } else {
      (this.#options.logger ?? silentLogger).warn('master.gone', { reason });
      process.exit(MASTER_GONE_EXIT_CODE);
    }
    return true;
  }

  /** Stops the checks. Idempotent. */
  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }

  #goneReason(): string | undefined {
    const pid = this.#options.masterPid;
    if (pid !== undefined) {
      if (pid === this.#initialParent && process.ppid !== pid) {
        return `the master process ${pid} that started this worker is gone (the parent is now ${process.ppid})`;
      }
      try {
        process.kill(pid, 0);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ESRCH') return `the master process ${pid} is gone`;
      }
    }
    const lease = this.#options.leaseMs;
    if (lease !== undefined && this.#failingSince !== undefined) {
      const failing = this.#now() - this.#failingSince;
      if (failing >= lease) return `calls to the master have failed for ${failing} ms (lease ${lease} ms)`;
    }
    return undefined;
  }
}
