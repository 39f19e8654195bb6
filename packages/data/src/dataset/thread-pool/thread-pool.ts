import { existsSync } from 'node:fs';
import { sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { DatasetError } from '../errors.js';
import type { ThreadData, ThreadJob, ThreadReply } from './messages.js';
import { packForTransfer } from './transferables.js';

/**
 * Path of the compiled thread program. From the TypeScript sources (tests run them through vitest)
 * there is no `map-thread.js` beside this file, so the built one in `dist/` is used: a thread is a
 * plain Node.js program and cannot load TypeScript.
 */
function threadProgramPath(): string {
  const beside = fileURLToPath(new URL('./map-thread.js', import.meta.url));
  if (existsSync(beside)) return beside;
  const at = beside.lastIndexOf(`${sep}src${sep}`);
  const built = at < 0 ? beside : `${beside.slice(0, at)}${sep}dist${sep}${beside.slice(at + 5)}`;
  if (existsSync(built)) return built;
  throw new DatasetError(
    'ERR_MAP_WORKER',
    `mapParallel cannot find its thread program ${beside}: build @edl/data first (pnpm run build:ts)`,
  );
}

let programPath: string | undefined;

interface Job {
  readonly index: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** One thread and the jobs it has not answered yet. */
class PoolThread {
  readonly #worker: Worker;
  readonly #jobs = new Map<number, Job>();
  #nextId = 0;
  #failure: DatasetError | undefined;
  /**
   * Time the thread spent on its jobs (as it measured them: the call and packing the result, not
   * the thread's start, its import or the time a job queued), and the jobs it answered so.
   */
  workMs = 0;
  completed = 0;

  constructor(data: ThreadData, describeFn: string) {
    programPath ??= threadProgramPath();
    this.#worker = new Worker(programPath, { workerData: data });
    // An idle thread must not keep the process alive; a thread with jobs must (see `run`).
    this.#worker.unref();
    this.#worker.on('message', (reply: ThreadReply) => {
      const job = this.#jobs.get(reply.id);
      if (job === undefined) return;
      this.#jobs.delete(reply.id);
      if (reply.ok) {
        this.workMs += reply.workMs;
        this.completed++;
      }
      if (this.#jobs.size === 0) this.#worker.unref();
      if (reply.ok) job.resolve(reply.value);
      else {
        const cause = Object.assign(new Error(reply.error.message), reply.error);
        job.reject(
          new DatasetError(
            'ERR_MAP_WORKER',
            `mapParallel ${describeFn} failed on element ${job.index}: ${reply.error.message}`,
            { cause },
          ),
        );
      }
    });
    const fail = (cause: unknown, what: string) => {
      this.#failure ??= new DatasetError('ERR_MAP_WORKER', `mapParallel ${describeFn}: ${what}`, { cause });
      for (const job of this.#jobs.values()) {
        job.reject(
          new DatasetError('ERR_MAP_WORKER', `${this.#failure.message} (element ${job.index})`, { cause }),
        );
      }
      this.#jobs.clear();
    };
    this.#worker.on('error', (error) => fail(error, `thread failed: ${error.message}`));
    this.#worker.on('exit', (code) => fail(undefined, `thread exited with code ${code}`));
  }

  /** Jobs sent and not answered yet. */
  get load(): number {
    return this.#jobs.size;
  }

  run(index: number, value: unknown, transfer: ArrayBuffer[]): Promise<unknown> {
    if (this.#failure !== undefined) {
      return Promise.reject(
        new DatasetError('ERR_MAP_WORKER', `${this.#failure.message} (element ${index})`, {
          cause: this.#failure,
        }),
      );
    }
    return new Promise((resolve, reject) => {
      const id = this.#nextId++;
      try {
        this.#worker.postMessage({ id, index, value } satisfies ThreadJob, transfer);
      } catch (error) {
        // Not cloneable (a function, a class instance with private state...): name the element.
        reject(
          new DatasetError(
            'ERR_MAP_WORKER',
            `mapParallel cannot send element ${index} to a thread: ${(error as Error).message}`,
            { cause: error },
          ),
        );
        return;
      }
      this.#jobs.set(id, { index, resolve, reject });
      if (this.#jobs.size === 1) this.#worker.ref();
    });
  }

  terminate(): Promise<number> {
    this.#failure ??= new DatasetError('ERR_MAP_WORKER', 'thread terminated');
    this.#worker.removeAllListeners('exit');
    for (const job of this.#jobs.values()) job.reject(this.#failure);
    this.#jobs.clear();
    return this.#worker.terminate();
  }
}

/** The threads of pools whose owner was dropped without `close()`. */
const abandoned = new FinalizationRegistry<{ threads: PoolThread[] }>((box) => {
  for (const thread of box.threads) void thread.terminate();
});

/** What a pool runs: the function to import and call on every thread. */
export interface ThreadPoolOptions extends ThreadData {
  /** Threads at most, started on demand. */
  readonly size: number;
  /** Transfer the ArrayBuffers of inputs as they are instead of copying each view's bytes. */
  readonly transferInputs: boolean;
}

/**
 * A pool of worker threads that each import one module export and call it on the values sent to
 * them (the pool of `IterDataset.mapParallel`). Threads start on the first `run()`; a job goes to the
 * least loaded thread. Idle threads never keep the process alive, and the threads are terminated by
 * `close()` or when the pool's owner is garbage collected.
 */
export class ThreadPool {
  readonly #options: ThreadPoolOptions;
  /** Threads at most (the tuner's with `workers: 'auto'`). */
  #size: number;
  /** Work time and jobs answered of threads already closed, and what `takeWork` reported so far. */
  #closedWork = { ms: 0, count: 0 };
  #reported = { ms: 0, count: 0 };
  readonly #describeFn: string;
  /** In a box that does not reference the pool's owner, for the finalization registry. */
  readonly #box: { threads: PoolThread[] } = { threads: [] };

  /** `owner`: the object whose collection terminates the threads (the iterator). */
  constructor(options: ThreadPoolOptions, owner: object) {
    this.#options = options;
    this.#size = options.size;
    this.#describeFn = `${options.exportName} of ${options.moduleUrl}`;
    abandoned.register(owner, this.#box);
  }

  /** Threads currently running. */
  get size(): number {
    return this.#box.threads.length;
  }

  /**
   * Sets the threads at most to `size` (the tuner's). New threads start on demand; threads past
   * `size` (the tuner stepped a change back) take no new job and end once they are idle.
   */
  resize(size: number): void {
    this.#size = Math.max(1, size);
  }

  /** Thread work time (ms) and jobs answered since the last call: the per-element cost of the work. */
  takeWork(): { ms: number; count: number } {
    let ms = this.#closedWork.ms;
    let count = this.#closedWork.count;
    for (const thread of this.#box.threads) {
      ms += thread.workMs;
      count += thread.completed;
    }
    const delta = { ms: ms - this.#reported.ms, count: count - this.#reported.count };
    this.#reported = { ms, count };
    return delta;
  }

  /** Maps `value` (the element at `index`) on the least loaded thread. */
  run(index: number, value: unknown): Promise<unknown> {
    const { threads } = this.#box;
    const { moduleUrl, exportName, args } = this.#options;
    while (threads.length < this.#size)
      threads.push(new PoolThread({ moduleUrl, exportName, args }, this.#describeFn));
    this.#retireSurplus();
    let thread = threads[0] as PoolThread;
    for (const candidate of threads.slice(0, this.#size))
      if (candidate.load < thread.load) thread = candidate;
    const transfer = new Set<ArrayBuffer>();
    const packed = packForTransfer(value, this.#options.transferInputs, transfer);
    return thread.run(index, packed, [...transfer]);
  }

  /** Ends the idle threads past the size; busy ones finish their jobs first. */
  #retireSurplus(): void {
    const { threads } = this.#box;
    for (let i = threads.length - 1; i >= this.#size; i--) {
      const thread = threads[i] as PoolThread;
      if (thread.load > 0) continue;
      threads.splice(i, 1);
      this.#closedWork.ms += thread.workMs;
      this.#closedWork.count += thread.completed;
      void thread.terminate();
    }
  }

  /** Terminates the threads (their pending jobs reject); a later `run()` starts new ones. */
  async close(): Promise<void> {
    const threads = this.#box.threads;
    this.#box.threads = [];
    for (const thread of threads) {
      this.#closedWork.ms += thread.workMs;
      this.#closedWork.count += thread.completed;
    }
    await Promise.all(threads.map((thread) => thread.terminate()));
  }
}
