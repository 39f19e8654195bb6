import type { JsonObject } from '../../protocols.js';
import { DatasetIteratorBase, DONE } from '../dataset-iterator-base.js';
import type { MapNode } from '../map-node.js';
import { isPromiseLike } from '../maybe-promise.js';
import { expectStateObject, stateCount } from '../state.js';

/** Options of `MapDataset.toIterDataset`. */
export interface ReadOptions {
  /** Most `get` calls in flight at once (default 8). */
  readonly threads?: number;
  /** Most elements read ahead of the consumer, in flight or done (default 32; 0: read on demand). */
  readonly prefetch?: number;
}

type Settled<T> = { ok: true; value: T | undefined } | { ok: false; error: unknown };

/**
 * Iterates a `MapDataset` in index order, skipping holes, with up to `prefetch` elements read ahead
 * by up to `threads` concurrent `get` calls; elements are returned in order whatever order the reads
 * finish in. State: `{ nextIndex }`, the index of the next element to look at, so a restore never
 * depends on what was read ahead.
 */
export class ToIterDatasetIterator<T> extends DatasetIteratorBase<T> {
  readonly #node: MapNode<T>;
  readonly #threads: number;
  readonly #prefetch: number;
  /** Index of the next element to return: the whole state. */
  #nextIndex = 0;
  /** Next index to start a read of; reads of `[#nextIndex, #readIndex)` are started. */
  #readIndex = 0;
  /** The started reads not yet consumed, in index order (the head may be awaited by `advance`). */
  #buffer: Array<Settled<T> | Promise<Settled<T>>> = [];
  #inFlight = 0;
  /** Bumped on restore, so reads started before it no longer count as in flight. */
  #generation = 0;

  constructor(node: MapNode<T>, options: ReadOptions = {}) {
    super();
    this.#node = node;
    this.#threads = options.threads ?? 8;
    this.#prefetch = options.prefetch ?? 32;
  }

  protected async advance(): Promise<IteratorResult<T>> {
    for (;;) {
      if (this.#nextIndex >= this.#node.length) return DONE;
      this.#fill(Math.max(1, this.#prefetch));
      const head = this.#buffer.shift()!;
      const settled = isPromiseLike(head) ? await head : head;
      if (!settled.ok) {
        // Keep the position on the failed element (a retry reads it again) and drop the read-ahead.
        this.#discardReadAhead();
        throw settled.error;
      }
      this.#nextIndex++;
      this.#fill(this.#prefetch);
      if (settled.value !== undefined) return { done: false, value: settled.value };
    }
  }

  /** Starts reads until `capacity` elements are buffered or `threads` reads are in flight. */
  #fill(capacity: number): void {
    const length = this.#node.length;
    while (
      this.#readIndex - this.#nextIndex < capacity &&
      this.#inFlight < this.#threads &&
      this.#readIndex < length
    ) {
      this.#buffer.push(this.#read(this.#readIndex++));
    }
  }

  #read(index: number): Settled<T> | Promise<Settled<T>> {
    let value: ReturnType<MapNode<T>['get']>;
    try {
      value = this.#node.get(index);
    } catch (error) {
      return { ok: false, error };
    }
    if (!isPromiseLike(value)) return { ok: true, value };
    this.#inFlight++;
    const generation = this.#generation;
    const done = () => {
      if (generation !== this.#generation) return;
      this.#inFlight--;
      this.#fill(this.#prefetch);
    };
    return value.then(
      (v): Settled<T> => {
        done();
        return { ok: true, value: v };
      },
      (error: unknown): Settled<T> => {
        done();
        return { ok: false, error };
      },
    );
  }

  #discardReadAhead(): void {
    this.#buffer = [];
    this.#readIndex = this.#nextIndex;
    this.#inFlight = 0;
    this.#generation++;
  }

  getState(): JsonObject {
    return { nextIndex: this.#nextIndex };
  }

  protected restore(state: JsonObject): void {
    const nextIndex = stateCount(expectStateObject(state, 'ToIterDataset'), 'nextIndex', 'ToIterDataset');
    this.#nextIndex = nextIndex;
    this.#discardReadAhead();
  }

  toString(): string {
    return `${this.#node} -> ToIterDataset(threads=${this.#threads}, prefetch=${this.#prefetch})`;
  }
}
