/**
 * The protocols of @edl/data. Code depends on these, never on concrete classes: a user-written reader
 * or source is a first-class citizen as long as it satisfies them.
 */

/** A plain JSON value: what states and descriptions are made of, so they can cross processes. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
/** A plain JSON object. */
export type JsonObject = { [key: string]: JsonValue };

/** A contiguous range of records of one data origin (a file, a table key range): ElasticDL's shard. */
export interface Shard {
  /** Identifies the shard to the reader that created it (a file path, a table range name). */
  readonly name: string;
  /** Index of the shard's first record. */
  readonly start: number;
  /** Number of records in the shard. */
  readonly count: number;
}

/** What a reader is asked to read: the records `[start, end)` of shard `shardName`. */
export interface RecordRange {
  readonly shardName: string;
  readonly start: number;
  readonly end: number;
}

/** Column names and types of the records a reader yields, where the reader knows them. */
export interface ReaderMetadata {
  readonly columns?: ReadonlyArray<{ readonly name: string; readonly type: string }>;
  readonly [key: string]:
    | JsonValue
    | undefined
    | ReadonlyArray<{ readonly name: string; readonly type: string }>;
}

/**
 * Consecutive records delivered by one read of {@link DataReader.readBatches}. Readers of bytes
 * deliver `@edl/recordio`'s `RecordBatch`: one buffer `data` plus `[begin, end)` offsets
 * `bounds`, as the native decoder produced them.
 */
export interface RecordBatchLike<TRecord = Uint8Array> {
  /** Number of records. */
  readonly length: number;
  /** Record `i` of the batch (for byte records, a view into `data`). */
  get(i: number): TRecord;
  /**
   * Hands the batch's memory back to its reader for a later read to reuse. Records taken from the
   * batch may be overwritten afterwards: call it only when none of them is still needed.
   */
  release(): void;
  /** The bytes the records live in (byte records). */
  readonly data?: Uint8Array;
  /** Two offsets per record into `data`: begin, end (byte records). */
  readonly bounds?: Uint32Array;
}

/**
 * ElasticDL's data reader: lists shards for the master and reads the records of a
 * task's range for a worker. `describe()` lets another process re-create the same reader.
 */
export interface DataReader<TRecord = Uint8Array> {
  createShards(): Promise<Shard[]>;
  readRecords(range: RecordRange): AsyncIterable<TRecord>;
  /**
   * Optional batch capability: the same records as `readRecords(range)`, in order, a batch at a
   * time, so that a consumer (the worker's TaskFeed) pays one step per batch instead of one per
   * record. The batches' lengths add up to `range.end - range.start`. A reader that has it must
   * yield exactly what `readRecords` would; callers fall back to `readRecords` when it is absent.
   */
  readBatches?(range: RecordRange): AsyncIterable<RecordBatchLike<TRecord>>;
  /**
   * Optional read-ahead: announces that `readRecords(range)` will be called, so that a reader that
   * can read ahead (the RecordIO reader, through its native prefetcher) starts reading the range now,
   * behind the ranges announced before it. Advisory and synchronous: it never throws for a bad range
   * (`readRecords` reports that) and never changes what `readRecords` yields. Callers announce ranges
   * in the order they will most likely read them (a worker: each task as soon as it receives it),
   * and only ranges they will read.
   */
  prefetch?(range: RecordRange): void;
  /**
   * Optional, beside `prefetch`: what the reader holds of the ranges announced to it against what
   * it can fetch ahead. A consumer that reads ranges in announce order (the worker's TaskFeed)
   * announces another range while `announcedBytes` is below `budgetBytes`, up to a cap of ranges
   * (`wantsAnotherRangeAhead`); a reader without it is announced one range ahead. Present
   * on the file and text readers when their data is remote (S3, HTTP), where a round trip per
   * range is the cost to hide; local files keep one range ahead.
   */
  readAheadBudget?(): ReadAheadBudget;
  readonly metadata: ReaderMetadata;
  describe(): ReaderDescription;
  close?(): Promise<void>;
}

/** What a reader that fetches ahead holds of the ranges announced to it (see DataReader.readAheadBudget). */
export interface ReadAheadBudget {
  /** Bytes the reader fetches ahead of its reads at most (e.g. `remote.readAheadBytes`). */
  readonly budgetBytes: number;
  /**
   * Bytes of the ranges announced and not read yet. A range counts once the reader has planned it
   * (a remote file's index is loaded first), so a consumer also caps how many ranges it announces.
   */
  readonly announcedBytes: number;
  /**
   * Ranges the reader wants announced ahead of the one it reads, to hide its fetch time at the pace
   * its ranges are read (remote files measure both). A consumer holds at most this many, within its
   * own cap; a reader without it is held 16 ranges ahead (`RANGES_AHEAD_UNMEASURED`).
   */
  readonly wantedRanges?: number;
}

/** A plain description from which `createDataReader` re-creates a reader in another process. */
export interface ReaderDescription {
  /** Reader type ('recordio', 'text', 'table') or a user module spec `module#export`. */
  readonly type: string;
  readonly params: JsonObject;
}

/**
 * Grain's random-access source: `get` must be deterministic and safe to call
 * concurrently; it may return a value or a promise of one.
 */
export interface RandomAccessDataSource<T> {
  readonly length: number;
  get(index: number): T | Promise<T>;
  getMany?(indices: readonly number[]): T[] | Promise<T[]>;
}

/**
 * An iterator whose position can be saved and restored exactly. The state is plain JSON of a fixed
 * shape; wrapping iterators keep their parent's state under `parent`.
 */
export interface DatasetIterator<T> extends AsyncIterator<T> {
  getState(): JsonObject;
  setState(state: JsonObject): void;
}

/**
 * Anything that makes checkpointable iterators over the same sequence each time: an `IterDataset`,
 * or a user class (e.g. a dataset fed by the master's tasks).
 */
export interface IterDatasetLike<T> {
  iterator(): DatasetIterator<T>;
}

/**
 * A plain description of a random-access source from which another process re-creates the same
 * source (Grain's picklable sources), e.g. `{ type: 'recordio', paths: ['a.rio'] }`.
 */
export interface DataSourceDescription {
  readonly type: string;
  readonly [key: string]: JsonValue;
}
