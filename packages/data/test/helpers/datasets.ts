// Small datasets and checks shared by the per-transform tests in test/dataset/transforms/.
import { expect } from 'vitest';
import { DatasetIteratorBase } from '../../src/dataset/dataset-iterator-base.js';
import { IterDataset } from '../../src/dataset/iter-dataset.js';
import type { MapDataset } from '../../src/dataset/map-dataset.js';
import type { JsonObject, RandomAccessDataSource } from '../../src/protocols.js';
import { assertCheckpointRoundTrip, delay } from './checkpoint.js';

/** Every element of a MapDataset by random access, holes included. */
export async function all<T>(ds: MapDataset<T>, count = ds.length): Promise<Array<T | undefined>> {
  return Promise.all(Array.from({ length: count }, (_, i) => ds.get(i)));
}

/** Checks the dataset's iteration (holes skipped) against `expected`, with checkpoints at every step. */
export async function expectIteration<T>(
  ds: MapDataset<T>,
  expected: T[],
  threads = 3,
  prefetch = 5,
): Promise<void> {
  const it = ds.toIterDataset({ threads, prefetch });
  const values = await assertCheckpointRoundTrip(() => it.iterator(), expected.length + 2);
  expect(values).toEqual(expected);
}

/** An async source: each get resolves after a pseudo-random number of macrotask turns. */
export class SlowSource implements RandomAccessDataSource<number> {
  readonly length: number;
  inFlight = 0;
  maxInFlight = 0;
  calls = 0;
  constructor(length: number) {
    this.length = length;
  }
  async get(index: number): Promise<number> {
    this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    await delay((index * 7) % 5);
    this.inFlight--;
    return index * 10;
  }
}

/** What a `CountingIterator` records of its reads, and a read to fail once. */
export interface ReadLog {
  reads: number;
  failAt?: number;
}

/** Options of `CountingIterator`. */
export interface CountingOptions {
  /** Counts the reads; a read of `failAt` throws once. */
  readonly log?: ReadLog;
  /** Macrotask turns added to every read (default 0). */
  readonly extraDelay?: number;
  /** What `toString()` says (default `Counting(end)`). */
  readonly name?: string;
}

/**
 * A slow sequential source of 0 .. end - 1 with its own seekable state: what a user (or the
 * worker's task feed) writes.
 */
export class CountingIterator extends DatasetIteratorBase<number> {
  #next = 0;
  constructor(
    readonly end: number,
    readonly options: CountingOptions = {},
  ) {
    super();
  }
  protected async advance(): Promise<IteratorResult<number>> {
    await delay((this.options.extraDelay ?? 0) + (this.#next % 3));
    if (this.#next >= this.end) return { done: true, value: undefined };
    const { log } = this.options;
    if (log !== undefined && log.failAt === this.#next) {
      log.failAt = undefined;
      throw new Error(`read ${this.#next} failed`);
    }
    if (log !== undefined) log.reads++;
    return { done: false, value: this.#next++ };
  }
  getState(): JsonObject {
    return { next: this.#next };
  }
  protected restore(state: JsonObject): void {
    this.#next = state.next as number;
  }
  toString(): string {
    return this.options.name ?? `Counting(${this.end})`;
  }
}

/** An IterDataset of 0 .. end - 1 read from a `CountingIterator`. */
export const counting = (end: number) =>
  IterDataset.fromIterator(() => new CountingIterator(end), `Counting(${end})`);

/** 0 .. n - 1. */
export const range = (n: number) => Array.from({ length: n }, (_, i) => i);
