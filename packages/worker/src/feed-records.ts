import {
  attribute,
  type DatasetIterator,
  DatasetIteratorBase,
  IterDataset,
  type JsonObject,
  permuteUnitWindow,
  type RecordBatchLike,
  type UnitPlace,
  unitWindowEnd,
  type WindowShuffleOptions,
} from '@edl/data';
import { WorkerError } from './errors.js';

/** Where a batch's records sit: their task's place, and the absolute position of the first. */
export interface BatchPlace extends UnitPlace {
  readonly start: number;
}

/** The place before the first batch. */
export const NO_PLACE: BatchPlace = Object.freeze({ unit: -1, key: 0, origin: 0, replay: false, start: 0 });

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });
const noop = (): void => {};

/** Where the records of a records dataset come from (see {@link TaskFeed.dataset}). */
export interface FeedSource<TRecord> {
  /** Starts the stream of batches (on the first read). */
  readonly open: () => AsyncIterator<RecordBatchLike<TRecord>>;
  /**
   * Called with each batch as it arrives, before any of its records is handed on; returns where its
   * records sit (their task, and the first one's position). A batch never spans two tasks.
   */
  readonly hold: (batch: RecordBatchLike<TRecord>) => BatchPlace;
  /**
   * Called by a window shuffle of `bufferSize` before the first read: a task re-issued from a
   * position inside it is then read from the start of that position's window, the records before
   * the position marked `replay` (see `UnitWindows` in @edl/data).
   */
  readonly align: (bufferSize: number) => void;
  /** The dataset's name, for `toString()` and errors. */
  readonly name: string;
  /** Records must keep their order within a task (prediction): no shuffle. */
  readonly ordered: boolean;
  /** Called when an iterator is made: the records can be read once (throws on a second call). */
  readonly claim: () => void;
}

/**
 * The batches of a feed and the read position in the one at hand, shared by the record-at-a-time
 * and the minibatch iterators: one step of the batch stream per batch, not per record.
 */
class BatchCursor<TRecord> {
  readonly #source: FeedSource<TRecord>;
  #batches: AsyncIterator<RecordBatchLike<TRecord>> | undefined;
  #done = false;
  /** The batch at hand (undefined before the first and after the last). */
  batch: RecordBatchLike<TRecord> | undefined;
  /** The next record's index in {@link batch}. */
  index = 0;
  /** Where {@link batch}'s records sit ({@link NO_PLACE} before the first). */
  place: BatchPlace = NO_PLACE;

  constructor(source: FeedSource<TRecord>) {
    this.#source = source;
  }

  /** Records left in the batch at hand. */
  get left(): number {
    return this.batch === undefined ? 0 : this.batch.length - this.index;
  }

  /** Makes sure a record is at hand, reading the next batch when needed; false at the end. */
  async fill(): Promise<boolean> {
    while (this.left === 0) {
      if (this.#done) return false;
      this.batch = undefined;
      this.#batches ??= this.#source.open();
      let result: IteratorResult<RecordBatchLike<TRecord>>;
      try {
        result = await this.#batches.next();
      } catch (error) {
        this.#done = true;
        throw error;
      }
      if (result.done) {
        this.#done = true;
        return false;
      }
      this.place = this.#source.hold(result.value);
      this.batch = result.value;
      this.index = 0;
    }
    return true;
  }

  async close(): Promise<void> {
    this.#done = true;
    this.batch = undefined;
    const batches = this.#batches;
    this.#batches = undefined;
    await batches?.return?.();
  }
}

function cannotRestore(name: string): never {
  throw new WorkerError('DATA_ERROR', `${name} reads the master's tasks: its position cannot be restored`);
}

/**
 * The iterator of the shared records dataset: records served from the batch at hand, one resolved
 * promise each, and the next batch read only when the batch runs dry. Calls to `next()` are served
 * in call order. Its records are attributed to their tasks (see `Attribution` in @edl/data), so
 * transforms that would break the worker's counting refuse to run over it.
 *
 * The dataset is fed by the master's tasks: it cannot be rewound, so `setState()` throws.
 */
export class FeedRecordsIterator<TRecord> implements DatasetIterator<TRecord> {
  readonly #cursor: BatchCursor<TRecord>;
  readonly #name: string;
  #returned = 0;
  /** Settles when the last slow `next()` (one that reads a batch) has; undefined when none is pending. */
  #tail: Promise<void> | undefined;

  constructor(source: FeedSource<TRecord>) {
    const cursor = new BatchCursor(source);
    this.#cursor = cursor;
    this.#name = source.name;
    attribute(this, {
      source: source.name,
      lastUnit: () => cursor.place.unit,
      inStep: true,
      elements: 'records',
      ordered: source.ordered,
      windows: {
        align: source.align,
        lastPlace: () => cursor.place,
        lastPosition: () => cursor.place.start + cursor.index - 1,
      },
    });
  }

  next(): Promise<IteratorResult<TRecord>> {
    if (this.#tail === undefined && this.#cursor.left > 0) return Promise.resolve(this.#take());
    const result = (this.#tail ?? Promise.resolve()).then(() => this.#advance());
    const tail = result.then(noop, noop);
    this.#tail = tail;
    void tail.then(() => {
      if (this.#tail === tail) this.#tail = undefined;
    });
    return result;
  }

  async return(): Promise<IteratorResult<TRecord>> {
    await this.#cursor.close();
    return DONE;
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  getState(): JsonObject {
    return { consumed: this.#returned };
  }

  setState(_state: JsonObject): void {
    cannotRestore(this.#name);
  }

  toString(): string {
    return this.#name;
  }

  #take(): IteratorResult<TRecord> {
    this.#returned++;
    const cursor = this.#cursor;
    return { done: false, value: (cursor.batch as RecordBatchLike<TRecord>).get(cursor.index++) };
  }

  async #advance(): Promise<IteratorResult<TRecord>> {
    return (await this.#cursor.fill()) ? this.#take() : DONE;
  }
}

/** Options of `minibatches`. */
export interface MinibatchOptions {
  /**
   * A window shuffle (as `IterDataset.shuffle`): each window of up to `bufferSize` records of one
   * task is permuted before it is cut into minibatches. Windows end where a task ends, so records
   * stay in their task (see docs/worker.md).
   */
  readonly shuffle?: WindowShuffleOptions;
}

/**
 * Minibatches of a feed's records as arrays, cut straight from the reader's batches: one promise
 * per minibatch, not per record. The last one of a segment may be shorter.
 */
export class FeedMinibatchIterator<TRecord> extends DatasetIteratorBase<TRecord[]> {
  readonly #cursor: BatchCursor<TRecord>;
  readonly #name: string;
  readonly #size: number;
  readonly #shuffle: WindowShuffleOptions | undefined;
  #returned = 0;
  /** The shuffled window at hand and the next record's index in it (with a shuffle). */
  #window: TRecord[] = [];
  #windowIndex = 0;

  constructor(source: FeedSource<TRecord>, size: number, shuffle: WindowShuffleOptions | undefined) {
    super();
    this.#cursor = new BatchCursor(source);
    this.#name = source.name;
    this.#size = size;
    this.#shuffle = shuffle;
    if (shuffle !== undefined) source.align(shuffle.bufferSize);
  }

  protected async advance(): Promise<IteratorResult<TRecord[]>> {
    const out: TRecord[] = [];
    while (out.length < this.#size && (await this.#fill())) {
      if (this.#shuffle === undefined) {
        const cursor = this.#cursor;
        const batch = cursor.batch as RecordBatchLike<TRecord>;
        const end = cursor.index + Math.min(this.#size - out.length, cursor.left);
        for (let i = cursor.index; i < end; i++) out.push(batch.get(i));
        cursor.index = end;
      } else {
        const end =
          this.#windowIndex + Math.min(this.#size - out.length, this.#window.length - this.#windowIndex);
        for (let i = this.#windowIndex; i < end; i++) out.push(this.#window[i] as TRecord);
        this.#windowIndex = end;
      }
    }
    if (out.length === 0) return DONE;
    this.#returned += out.length;
    return { done: false, value: out };
  }

  /** Makes sure a record is at hand (in the cursor, or in the window with a shuffle); false at the end. */
  async #fill(): Promise<boolean> {
    const shuffle = this.#shuffle;
    if (shuffle === undefined) return this.#cursor.fill();
    if (this.#windowIndex < this.#window.length) return true;
    // The next window: the records of the task at hand up to the end of the window (of bufferSize
    // records from the task's first) that the first one is in; a re-issued task's first window
    // replays the records before where it resumes, whose outputs are skipped (consumed before).
    const cursor = this.#cursor;
    const values: TRecord[] = [];
    let first: BatchPlace | undefined;
    let windowStart = 0;
    let end = 0;
    let replayed = 0;
    /** Where in `values` the records of the last batch read (not replayed) begin, -1 for none. */
    let lastBatchFrom = -1;
    while (await cursor.fill()) {
      const place = cursor.place;
      const position = place.start + cursor.index;
      if (first === undefined) {
        first = place;
        windowStart = position;
        end = unitWindowEnd(position, place.origin, shuffle.bufferSize);
      } else if (place.unit !== first.unit || position >= end) {
        break;
      }
      // The window goes on past the end of the batch before: copy its records out of it (see
      // copyRecords).
      if (lastBatchFrom >= 0) copyRecords(values, lastBatchFrom);
      const batch = cursor.batch as RecordBatchLike<TRecord>;
      const stop = cursor.index + Math.min(end - position, cursor.left);
      lastBatchFrom = place.replay ? -1 : values.length;
      for (let i = cursor.index; i < stop; i++) values.push(batch.get(i));
      if (place.replay) replayed += stop - cursor.index;
      cursor.index = stop;
    }
    if (first === undefined) return false;
    this.#window = permuteUnitWindow(values, shuffle.seed, first.key, windowStart);
    this.#windowIndex = replayed;
    return this.#windowIndex < this.#window.length;
  }

  async return(): Promise<IteratorResult<TRecord[]>> {
    this.#window = [];
    await this.#cursor.close();
    return DONE;
  }

  getState(): JsonObject {
    return { consumed: this.#returned };
  }

  protected restore(_state: JsonObject): void {
    cannotRestore(this.#name);
  }

  toString(): string {
    return `${this.#name} -> Minibatches(${this.#size})`;
  }
}

/**
 * Replaces the byte records of `values` from `from` on, views into one batch of the feed, with
 * copies in one fresh buffer. A shuffle window that goes on past the end of a batch hands that
 * batch's records out in any of its minibatches, while the feed counts the batch consumed (and,
 * with `reuseBatches`, hands its memory back to the reader) once as many records as it held were
 * taken: the copies keep a `datasetFn` that decodes each minibatch as it comes (and so may set
 * `reuseRecordMemory`) safe with a shuffle. Windows usually end where batches do (both are cut
 * from the task's first record), so this is rare. Records of other kinds are left as they are.
 */
function copyRecords<TRecord>(values: TRecord[], from: number): void {
  let bytes = 0;
  for (let i = from; i < values.length; i++) {
    const value = values[i];
    if (!(value instanceof Uint8Array)) return;
    bytes += value.length;
  }
  const copy = new Uint8Array(bytes);
  let offset = 0;
  for (let i = from; i < values.length; i++) {
    const value = values[i] as Uint8Array;
    copy.set(value, offset);
    values[i] = copy.subarray(offset, offset + value.length) as TRecord;
    offset += value.length;
  }
}

/** The feeds behind the records datasets the worker made, for the direct path of `minibatches`. */
const feedSources = new WeakMap<IterDataset<unknown>, FeedSource<unknown>>();

/** The shared records dataset over `source` (see {@link TaskFeed.dataset}). */
export function feedRecordsDataset<TRecord>(source: FeedSource<TRecord>): IterDataset<TRecord> {
  const dataset = IterDataset.fromIterator(() => {
    source.claim();
    return new FeedRecordsIterator<TRecord>(source);
  }, source.name);
  feedSources.set(dataset, source as FeedSource<unknown>);
  return dataset;
}

/** The feed behind `records` when it is a worker's records dataset; undefined for any other dataset. */
export function feedSourceOf<TRecord>(records: IterDataset<TRecord>): FeedSource<TRecord> | undefined {
  return feedSources.get(records) as FeedSource<TRecord> | undefined;
}
