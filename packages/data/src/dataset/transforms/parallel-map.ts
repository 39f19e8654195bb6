import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { checkInteger, invalidArgument } from '@edl/common';
import type { DatasetIterator, JsonObject, JsonValue } from '../../protocols.js';
import { SLOTS_PER_THREAD } from '../autotune/hill-climb.js';
import { StageProbe } from '../autotune/stage-probe.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { DatasetError } from '../errors.js';
import { ParentChain } from '../parent-chain.js';
import { copyState, expectStateObject, stateCount, stateObject } from '../state.js';
import { notAFunctionMessage } from '../thread-pool/messages.js';
import { ThreadPool } from '../thread-pool/thread-pool.js';

/**
 * Options of `IterDataset.mapParallel`. Functions cannot cross threads, so the function is named by
 * its module and export; every thread imports the module once. The export is called as
 * `fn(value, args, { index })` (sync or async) where `index` is the element's position in this
 * stage's output, so per-element randomness can be derived from `(seed, index)`.
 */
export interface ParallelMapOptions {
  /** The module: an absolute path, a `file:` URL string or a URL (e.g. `new URL('./fns.js', import.meta.url)`). */
  readonly module: string | URL;
  /** Name of the exported function (default `default`). */
  readonly export?: string;
  /** Plain JSON passed to every call (default null). */
  readonly args?: JsonValue;
  /**
   * Threads (default `'auto'`; before, the available cores - 1). 0 runs the function on the calling thread
   * when `next()` asks, without read-ahead (as Grain's `worker_count=0`): the serialized baseline.
   * `'auto'`: the process's tuner adds threads, from 1, while the measured rates say one more
   * shortens the consumer's wait, within the CPU and RAM budgets (see `configureAutotune`).
   */
  readonly workers?: number | 'auto';
  /** Output order; only `true` (deterministic, checkpointable) is supported. */
  readonly ordered?: boolean;
  /**
   * Elements read ahead and in flight at most (default 2 * workers, at least 2, and `'auto'` with
   * `'auto'` workers; unused with 0 workers). `'auto'`: set by the tuner within the RAM budget, at
   * least two per thread.
   */
  readonly bufferSize?: number | 'auto';
  /**
   * Transfer the ArrayBuffers of the inputs as they are (zero copy; detaches them in the parent's
   * values). Default false: each typed-array view is copied to a buffer of exactly its bytes (a view
   * into a large buffer, such as a record of a RecordIO chunk, never clones the whole buffer).
   */
  readonly transferInputs?: boolean;
}

/** A function callable by `mapParallel`. */
export type ParallelMapFn<T = unknown, U = unknown> = (
  value: T,
  args: JsonValue,
  context: { readonly index: number },
) => U | Promise<U>;

/** The option values after checks. */
interface Resolved {
  readonly moduleUrl: string;
  readonly exportName: string;
  readonly args: JsonValue;
  /** Initial values; with `'auto'` the tuner changes them. */
  readonly workers: number;
  readonly bufferSize: number;
  readonly autoWorkers: boolean;
  readonly autoBuffer: boolean;
  readonly transferInputs: boolean;
}

/**
 * `workers` when not given: `'auto'` (and the buffer with it), since the idle run of
 * bench/autotune.mjs showed the tuner never worse than a fixed count: on its CPU-bound map 1.83x
 * the cores-less-one default on 2 cores (which gave 1 thread), 0.94-0.96x of the best hand-set point;
 * a cheap map stays at one thread rather than taking every core (docs/datasets.md "Autotuning").
 */
const DEFAULT_WORKERS: number | 'auto' = 'auto';

/** Memory charged per map thread against the RAM budget: a worker thread's own heap and isolate. */
const THREAD_BYTES = 16 * 2 ** 20;

/** Checks `mapParallel` options (at dataset construction, so mistakes fail early). */
export function resolveParallelMapOptions(options: ParallelMapOptions): Resolved {
  if (typeof options !== 'object' || options === null)
    invalidArgument('an options object', 'options', options);
  const { module } = options;
  let moduleUrl: string;
  if (module instanceof URL) moduleUrl = module.href;
  else if (typeof module === 'string' && module.startsWith('file:')) moduleUrl = new URL(module).href;
  else if (typeof module === 'string' && path.isAbsolute(module)) moduleUrl = pathToFileURL(module).href;
  else invalidArgument('an absolute path, a file: URL or a URL', 'options.module', module);
  const exportName = options.export ?? 'default';
  if (typeof exportName !== 'string' || exportName.length === 0)
    invalidArgument('an export name', 'options.export', exportName);
  const args = options.args ?? null;
  let argsJson: string | undefined;
  try {
    argsJson = JSON.stringify(args);
  } catch {
    argsJson = undefined;
  }
  if (argsJson === undefined) invalidArgument('plain JSON', 'options.args', args);
  const requestedWorkers = options.workers ?? DEFAULT_WORKERS;
  const autoWorkers = requestedWorkers === 'auto';
  // A fixed buffer would cap the threads the tuner may add: it follows 'auto' workers unless given.
  const autoBuffer = options.bufferSize === 'auto' || (options.bufferSize === undefined && autoWorkers);
  const workers = autoWorkers ? 1 : checkInteger(requestedWorkers, 'options.workers', 0, 1024);
  const bufferSize = autoBuffer
    ? SLOTS_PER_THREAD * workers
    : checkInteger(options.bufferSize ?? Math.max(2, 2 * workers), 'options.bufferSize', 1);
  if (options.ordered !== undefined && options.ordered !== true)
    invalidArgument('true (only ordered output is supported)', 'options.ordered', options.ordered);
  if (options.transferInputs !== undefined && typeof options.transferInputs !== 'boolean')
    invalidArgument('a boolean', 'options.transferInputs', options.transferInputs);
  return {
    moduleUrl,
    exportName,
    args: JSON.parse(argsJson) as JsonValue,
    workers,
    bufferSize,
    autoWorkers,
    autoBuffer,
    transferInputs: options.transferInputs ?? false,
  };
}

/** An element read from the parent and being mapped. */
interface Entry<U> {
  readonly result: Promise<IteratorResult<U>>;
  /** Parent state right after this element was read. */
  readonly stateAfter: JsonObject;
}

/**
 * `IterDataset.mapParallel`: maps elements on a pool of worker threads (tf.data's
 * `map(num_parallel_calls)`, Grain's multiprocessing), in order. Up to `bufferSize` elements are read
 * from the parent and in flight at once; each is sent to the least loaded thread. Results come back
 * in the parent's order.
 *
 * The state is the parent's state at the position of the next element to be *returned*, and that
 * element's index: `{ parent, nextIndex }`. Restoring discards the elements in flight. Threads start
 * on the first `next()`, and are terminated when the end (or a parent error) is returned, by
 * `return()` / `close()` (a `for await` that breaks calls it), or when the iterator is garbage
 * collected; they never keep the process alive while idle. A failure of the function is a `DatasetError` `ERR_MAP_WORKER` naming the element.
 * With `'auto'` workers or buffer size, the tuner changes them between elements; the elements, their
 * order and the state do not depend on them.
 */
export class ParallelMapIterator<T, U> extends DatasetIteratorBase<U> {
  readonly #parent: DatasetIterator<T>;
  readonly #o: Resolved;
  readonly #describeFn: string;
  readonly #pending: Entry<U>[] = [];
  readonly #pool: ThreadPool;
  /** Threads and elements in flight at most (the tuner's with `'auto'`). */
  #workers: number;
  #bufferSize: number;
  readonly #probe: StageProbe | undefined;
  #inline: Promise<ParallelMapFn<unknown, U>> | undefined;
  #state: JsonObject | undefined;
  /** Index of the next element to return, and of the next one to read from the parent. */
  #nextIndex = 0;
  #readIndex = 0;
  /** Every parent call goes through this chain, so a restore waits for a running read. */
  readonly #chain = new ParentChain(() => this.#notify());
  #filling = false;
  #stopped = false;
  #generation = 0;
  #wake: (() => void) | undefined;
  /** `return()` or `close()` was called: done until a `setState()`. */
  #closed = false;

  constructor(parent: DatasetIterator<T>, options: Resolved) {
    super();
    this.#parent = parent;
    this.#o = options;
    this.#describeFn = `${options.exportName} of ${options.moduleUrl}`;
    this.#workers = options.workers;
    this.#bufferSize = options.bufferSize;
    if (options.autoWorkers || options.autoBuffer) {
      this.#probe = new StageProbe({
        label: `ParallelMap(${options.exportName})`,
        initial: { parallelism: this.#workers, bufferSize: this.#bufferSize },
        tuneParallelism: options.autoWorkers,
        tuneBuffer: options.autoBuffer,
        hasWork: true,
        threadBytes: THREAD_BYTES,
        apply: (settings) => {
          this.#workers = settings.parallelism;
          this.#bufferSize = settings.bufferSize;
          this.#pool.resize(settings.parallelism);
          this.#startFilling();
        },
      });
    }
    this.#pool = new ThreadPool(
      {
        moduleUrl: options.moduleUrl,
        exportName: options.exportName,
        args: options.args,
        size: options.workers,
        transferInputs: options.transferInputs,
      },
      this,
    );
  }

  /** Threads currently running (0 before the first `next()` and after the end or `close()`). */
  get threadCount(): number {
    return this.#pool.size;
  }

  /** Threads and elements in flight at most, now (the tuner's with `'auto'`). */
  get settings(): { readonly workers: number; readonly bufferSize: number } {
    return { workers: this.#workers, bufferSize: this.#bufferSize };
  }

  protected async advance(): Promise<IteratorResult<U>> {
    const probe = this.#probe;
    if (probe === undefined) return this.#advance();
    probe.asked();
    let result: IteratorResult<U>;
    try {
      result = await this.#advance();
    } catch (error) {
      probe.ended();
      throw error;
    }
    if (result.done) probe.ended();
    else {
      const work = this.#pool.takeWork();
      probe.addWork(work.ms, work.count);
      probe.returned(result.value);
    }
    return result;
  }

  async #advance(): Promise<IteratorResult<U>> {
    if (this.#closed) return DONE;
    if (this.#workers === 0) return this.#advanceInline();
    if (this.#state === undefined) this.#state = this.#parent.getState();
    for (;;) {
      this.#chain.throwIfFailed();
      const entry = this.#pending.shift();
      if (entry !== undefined) {
        this.#state = entry.stateAfter;
        this.#startFilling();
        let result: IteratorResult<U>;
        try {
          result = await entry.result;
        } catch (error) {
          this.#nextIndex++;
          this.#stopped = false;
          if (!(error instanceof DatasetError && error.code === 'ERR_MAP_WORKER')) await this.#closeThreads();
          throw error;
        }
        if (result.done) {
          this.#stopped = false;
          await this.#closeThreads();
          return DONE;
        }
        this.#nextIndex++;
        return result;
      }
      const woken = new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#startFilling();
      await woken;
    }
  }

  /** `workers: 0`: read and map on demand, on this thread, with no read-ahead (a serialized loop). */
  async #advanceInline(): Promise<IteratorResult<U>> {
    const read = await this.#parent.next();
    this.#state = this.#parent.getState();
    if (read.done) return DONE;
    const index = this.#nextIndex++;
    this.#readIndex = this.#nextIndex;
    return { done: false, value: await this.#runInline(index, read.value) };
  }

  /** Terminates the threads and ends the iteration (also what `for await ... break` calls). */
  async return(): Promise<IteratorResult<U>> {
    await this.close();
    return DONE;
  }

  /** Terminates the threads and drops the elements in flight; `next()` then returns done until `setState()`. */
  async close(): Promise<void> {
    this.#probe?.ended();
    this.#closed = true;
    this.#generation++;
    this.#pending.length = 0;
    this.#filling = false;
    this.#stopped = false;
    await this.#closeThreads();
  }

  #closeThreads(): Promise<void> {
    return this.#pool.close();
  }

  #startFilling(): void {
    if (this.#filling || this.#stopped || this.#pending.length >= this.#bufferSize) return;
    this.#filling = true;
    const generation = this.#generation;
    this.#chain.enqueue(() => this.#fill(generation));
  }

  async #fill(generation: number): Promise<void> {
    try {
      while (generation === this.#generation && this.#pending.length < this.#bufferSize) {
        const endInput = this.#probe?.startInput();
        let read: IteratorResult<T> | { error: unknown };
        try {
          read = await this.#parent.next();
        } catch (error) {
          read = { error };
        }
        if (generation !== this.#generation) return;
        const stateAfter = this.#parent.getState();
        let result: Promise<IteratorResult<U>>;
        if ('error' in read) result = Promise.reject(read.error);
        else if (read.done) result = Promise.resolve(DONE);
        else {
          const index = this.#readIndex++;
          result = this.#dispatch(index, read.value).then((value) => ({ done: false, value }));
        }
        // The parent's read and the hand-off to a thread are this stage's input time.
        endInput?.('error' in read || read.done ? undefined : read.value);
        // Rejections are handled when the consumer gets there; keep Node from reporting them early.
        result.catch(() => undefined);
        this.#pending.push({ result, stateAfter });
        this.#notify();
        if ('error' in read || read.done) {
          this.#stopped = true;
          return;
        }
      }
    } finally {
      if (generation === this.#generation) this.#filling = false;
      this.#notify();
    }
  }

  #dispatch(index: number, value: T): Promise<U> {
    if (this.#workers === 0) return this.#runInline(index, value);
    return this.#pool.run(index, value) as Promise<U>;
  }

  async #runInline(index: number, value: T): Promise<U> {
    this.#inline ??= import(this.#o.moduleUrl).then((m: Record<string, unknown>) => {
      const fn = m[this.#o.exportName];
      if (typeof fn !== 'function') throw new TypeError(notAFunctionMessage(this.#o, m));
      return fn as ParallelMapFn<unknown, U>;
    });
    try {
      const fn = await this.#inline;
      return await fn(value, this.#o.args, { index });
    } catch (error) {
      throw new DatasetError(
        'ERR_MAP_WORKER',
        `mapParallel ${this.#describeFn} failed on element ${index}: ${(error as Error).message}`,
        { cause: error },
      );
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  getState(): JsonObject {
    return { parent: copyState(this.#state ?? this.#parent.getState()), nextIndex: this.#nextIndex };
  }

  protected restore(state: JsonObject): void {
    const checked = expectStateObject(state, 'ParallelMap');
    const parentState = copyState(stateObject(checked, 'parent', 'ParallelMap'));
    const nextIndex = stateCount(checked, 'nextIndex', 'ParallelMap');
    this.#generation++;
    this.#closed = false;
    this.#pending.length = 0;
    this.#stopped = false;
    this.#filling = false;
    this.#state = parentState;
    this.#nextIndex = nextIndex;
    this.#readIndex = nextIndex;
    this.#chain.runAfterQueued(() => this.#parent.setState(parentState));
  }

  toString(): string {
    const workers = this.#o.autoWorkers ? 'auto' : this.#o.workers;
    return `${this.#parent} -> ParallelMap(${this.#o.exportName}, workers=${workers})`;
  }
}
