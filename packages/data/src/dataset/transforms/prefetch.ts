import type { DatasetIterator, JsonObject } from '../../protocols.js';
import { StageProbe } from '../autotune/stage-probe.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import { ParentChain } from '../parent-chain.js';
import { RingBuffer } from '../ring-buffer.js';
import { copyState, expectStateObject, stateObject } from '../state.js';

/** A read-ahead element with the parent's state just after it was produced. */
interface Entry<T> {
  readonly result: { ok: true; value: IteratorResult<T> } | { ok: false; error: unknown };
  readonly stateAfter: JsonObject;
}

/**
 * `IterDataset.prefetch`: keeps up to `bufferSize` elements of its parent read ahead, in the
 * background, in a ring buffer.
 *
 * The state is the parent's state at the position of the next element to be *returned*, not of the
 * read-ahead: each buffered element carries the parent state captured right after it was produced,
 * and returning it makes that the current state. A restore discards the buffer; the parent is
 * restored at once when no background read runs, else right after the running read completes.
 * State: `{ parent }`.
 *
 * With `bufferSize: 'auto'` the process's tuner sets the size from the measured read and consumer
 * times within the RAM budget (starting at 1); the elements and their order do not change.
 */
export class PrefetchIterator<T> extends DatasetIteratorBase<T> {
  readonly #parent: DatasetIterator<T>;
  #bufferSize: number;
  #buffer: RingBuffer<Entry<T>>;
  /** Set with `'auto'`: measures the stage and receives the tuner's buffer size. */
  readonly #probe: StageProbe | undefined;
  /** Parent state at the position of the next element to return; undefined before the first read. */
  #state: JsonObject | undefined;
  /** Every parent call goes through this chain, so a restore waits for a running read. */
  readonly #chain = new ParentChain(() => this.#notify());
  #filling = false;
  /** The parent returned done or failed: stop reading ahead until the consumer gets there. */
  #stopped = false;
  #generation = 0;
  #wake: (() => void) | undefined;

  constructor(parent: DatasetIterator<T>, bufferSize: number | 'auto') {
    super();
    this.#parent = parent;
    this.#bufferSize = bufferSize === 'auto' ? 1 : bufferSize;
    this.#buffer = new RingBuffer(this.#bufferSize);
    if (bufferSize === 'auto') {
      this.#probe = new StageProbe({
        label: 'Prefetch',
        initial: { parallelism: 1, bufferSize: 1 },
        tuneParallelism: false,
        tuneBuffer: true,
        hasWork: false,
        apply: ({ bufferSize: size }) => this.#resize(size),
      });
    }
  }

  /** The buffer size now (the tuner's with `'auto'`). */
  get bufferSize(): number {
    return this.#bufferSize;
  }

  #resize(size: number): void {
    this.#bufferSize = size;
    // A smaller size takes effect as the consumer drains the ring; a larger one needs a larger ring.
    if (size > this.#buffer.capacity) this.#buffer = this.#buffer.resized(size);
    this.#startFilling();
  }

  protected async advance(): Promise<IteratorResult<T>> {
    this.#probe?.asked();
    const result = await this.#advance();
    if (result.done) this.#probe?.ended();
    else this.#probe?.returned(result.value);
    return result;
  }

  async #advance(): Promise<IteratorResult<T>> {
    if (this.#state === undefined) this.#state = this.#parent.getState();
    for (;;) {
      this.#chain.throwIfFailed();
      const entry = this.#buffer.shift();
      if (entry !== undefined) {
        this.#state = entry.stateAfter;
        if (!entry.result.ok) {
          // The failure was the last read; a later next() asks the parent again.
          this.#stopped = false;
          throw entry.result.error;
        }
        if (entry.result.value.done) {
          this.#stopped = false;
          return DONE;
        }
        this.#startFilling();
        return entry.result.value;
      }
      const woken = new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#startFilling();
      await woken;
    }
  }

  /** Runs one background fill loop at a time, appended to the parent chain. */
  #startFilling(): void {
    if (this.#filling || this.#stopped || this.#buffer.length >= this.#bufferSize) return;
    this.#filling = true;
    const generation = this.#generation;
    this.#chain.enqueue(() => this.#fill(generation));
  }

  async #fill(generation: number): Promise<void> {
    try {
      while (generation === this.#generation && this.#buffer.length < this.#bufferSize) {
        let result: Entry<T>['result'];
        const endInput = this.#probe?.startInput();
        try {
          result = { ok: true, value: await this.#parent.next() };
        } catch (error) {
          result = { ok: false, error };
        }
        endInput?.();
        if (generation !== this.#generation) return;
        this.#buffer.push({ result, stateAfter: this.#parent.getState() });
        this.#notify();
        if (!result.ok || result.value.done) {
          this.#stopped = true;
          return;
        }
      }
    } finally {
      if (generation === this.#generation) this.#filling = false;
      this.#notify();
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  getState(): JsonObject {
    return { parent: copyState(this.#state ?? this.#parent.getState()) };
  }

  protected restore(state: JsonObject): void {
    const parentState = copyState(stateObject(expectStateObject(state, 'Prefetch'), 'parent', 'Prefetch'));
    this.#generation++;
    this.#buffer.clear();
    this.#stopped = false;
    this.#state = parentState;
    this.#filling = false;
    // A background read (or an earlier restore) may still be running on the parent: restore after it.
    this.#chain.runAfterQueued(() => this.#parent.setState(parentState));
  }

  toString(): string {
    return `${this.#parent} -> Prefetch(${this.#probe === undefined ? this.#bufferSize : 'auto'})`;
  }
}
