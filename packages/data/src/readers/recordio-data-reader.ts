import { availableParallelism } from 'node:os';
import { checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import { Prefetcher, type RecordBatch, RecordIOReader } from '@edl/recordio';
import type { ObjectStat } from '@edl/storage';
import { autotuneBudgets } from '../dataset/autotune/index.js';
import type { JsonObject, RecordRange } from '../protocols.js';
import { checkRange } from './check-range.js';
import {
  FileDataReader,
  type FileFormat,
  type FileList,
  type FileReaderOptions,
  type RemoteSettings,
} from './file-data-reader.js';
import { type FileRange, fileRangeKey, PrefetchedRanges } from './prefetched-ranges.js';
import { ReadAheadTuning } from './read-ahead-tuning.js';

/**
 * Options of {@link RecordIODataReader.open}: exactly one of `dataDir` (every regular file in it is a
 * RecordIO file) and `files`, as {@link FileReaderOptions}.
 */
export type RecordIODataReaderOptions = FileReaderOptions & {
  /** A corrupt chunk fails the read (`error`, default) or is skipped and counted (`skip`). */
  readonly onCorruptChunk?: 'error' | 'skip';
  /**
   * Reading through the native prefetcher, which reads announced ranges ahead on its own threads
   * (see {@link RecordIODataReader.prefetch}); `false` reads each range when it is asked for, with
   * no read-ahead across ranges. Default `{}` (prefetching with the defaults below).
   */
  readonly prefetch?: RecordIOPrefetchOptions | false;
};

/** Options of the native prefetcher of a {@link RecordIODataReader}. */
export interface RecordIOPrefetchOptions {
  /**
   * Decoding threads; `0` decodes on the JavaScript thread when records are asked for. Default 2 (1
   * on one core). `'auto'`: the prefetcher starts as many threads as the process's data CPU budget
   * (`configureAutotune`) allows, plus the consumer's core it may lend, at most 4, with one active;
   * the dataset tuner activates more while they measurably raise throughput and the budget,
   * shared with the `'auto'` dataset stages, has room (tf.data's AUTOTUNE of parallel reads).
   */
  readonly threads?: number | 'auto';
  /**
   * Records per native batch (one crossing into JavaScript), and at most 4 MiB of records per
   * batch whatever the count. Default 4096: per-batch costs on the JavaScript thread (a wake-up,
   * the batch's objects) then stay small enough that a second decoding thread pays on two cores
   * (bench/RESULTS.md, batch-path), and a batch of ~100 B records is ~400 KB.
   */
  readonly batchSize?: number;
  /**
   * Decoded bytes read ahead of the consumer, in the native ring; also the bound on bytes of
   * announced ranges pulled past while another range is read first. Default 64 MiB. `'auto'`: the
   * dataset tuner sets it in batches of the measured size, from 2 per active thread, grown while
   * the consumer waits for batches, at most a quarter of the process's data RAM budget and 64 MiB,
   * within the RAM budget it shares with the `'auto'` dataset stages (pulled-past ranges keep the
   * most).
   */
  readonly maxBufferedBytes?: number | 'auto';
  /**
   * How files whose chunks are all stored uncompressed are read. `'direct'` (default): each range
   * when it is asked for, as chunk-aligned batches (`RecordIOReader.batches`: the first on the
   * calling thread, later ones read ahead on the libuv pool), never announced to the prefetcher:
   * decoding them is a copy, and a hand-off between threads costs more CPU per record than it
   * saves (see bench/RESULTS.md, batch-path). A range announced before its file was open waits
   * for the open to tell. `'prefetch'`: through the prefetcher like compressed files.
   */
  readonly storedFiles?: 'direct' | 'prefetch';
}

const PREFETCH_KEYS = ['threads', 'batchSize', 'maxBufferedBytes', 'storedFiles'];
const MIB = 1024 * 1024;
/** Record bytes per native batch at most: large records still come several batches per budget. */
const MAX_BATCH_BYTES = 4 * MIB;

const RECORDIO: FileFormat = {
  type: 'recordio',
  name: 'RecordIO',
  accepts: () => true,
  noFiles: (dataDir) => `${dataDir} holds no RecordIO file`,
};

/**
 * ElasticDL's default reader: one shard per RecordIO file, named by the file's absolute path, in
 * sorted (code-unit) order of paths; the record counts come from the native chunk-header index.
 * Records are `Uint8Array` views into the batch the native core decoded (no copies); keep or copy
 * them as you like, they stay valid. Files with no records give no shard.
 */
export class RecordIODataReader extends FileDataReader<RecordIOReader> {
  /**
   * Announces that `readRecords(range)` will follow: the range is queued on the native prefetcher
   * now and read ahead, after the ranges announced before it, while earlier ranges are consumed.
   * Advisory: an invalid range announces nothing, and `readRecords` reports what is wrong in its
   * turn. Announce only ranges you will read: a range never read costs its read-ahead until
   * `maxBufferedBytes` of such ranges forces it out. Absent with `prefetch: false` (a reader that
   * cannot read ahead has no `prefetch`, so callers such as the worker's TaskFeed do not try).
   */
  readonly prefetch?: (range: RecordRange) => void;
  readonly #onCorruptChunk: 'error' | 'skip';
  /** `options.prefetch` as given (undefined: the defaults), for describe(). */
  readonly #prefetchParam: JsonObject | false | undefined;
  readonly #ranges: PrefetchedRanges | undefined;
  /** `prefetch.storedFiles === 'direct'`: stored-only files bypass the prefetcher. */
  readonly #storedDirect: boolean;
  /** Per opened file: whether every chunk is stored uncompressed. */
  readonly #storedOnly = new Map<string, boolean>();
  /** Ranges announced before their file was open, until it is (see #announceWhenOpen). */
  readonly #awaitingOpen = new Set<string>();
  /** With `'auto'` threads or read-ahead: the read-ahead as a stage of the dataset tuner. */
  readonly #tuning: ReadAheadTuning | undefined;

  private constructor(
    files: FileList,
    maxOpenFiles: number,
    onCorruptChunk: 'error' | 'skip',
    prefetch: ResolvedPrefetchOptions | false,
    prefetchParam: JsonObject | false | undefined,
    remote: RemoteSettings,
  ) {
    super(RECORDIO, files, maxOpenFiles, remote, onCorruptChunk);
    this.#onCorruptChunk = onCorruptChunk;
    this.#prefetchParam = prefetchParam;
    this.#storedDirect = prefetch !== false && prefetch.storedFiles === 'direct';
    const tuned = prefetch !== false && (prefetch.threads === 'auto' || prefetch.maxBufferedBytes === 'auto');
    const resolved = prefetch === false ? undefined : resolveAuto(prefetch);
    this.#tuning =
      tuned && resolved !== undefined && resolved.threads > 0
        ? new ReadAheadTuning({
            maxThreads: resolved.threads,
            maxBytes: resolved.maxBufferedBytes,
            tuneThreads: prefetch.threads === 'auto',
            tuneBytes: prefetch.maxBufferedBytes === 'auto',
            maxBatchBytes: MAX_BATCH_BYTES,
            batchRecords: prefetch.batchSize,
          })
        : undefined;
    this.#ranges =
      prefetch === false || resolved === undefined
        ? undefined
        : new PrefetchedRanges(
            () => {
              const prefetcher = Prefetcher.create({
                threads: resolved.threads,
                batchSize: prefetch.batchSize,
                maxBatchBytes: MAX_BATCH_BYTES,
                maxBufferedBytes: resolved.maxBufferedBytes,
                maxOpenFiles,
                onCorruptChunk,
              });
              this.#tuning?.attach(prefetcher);
              return prefetcher;
            },
            resolved.maxBufferedBytes,
            this.#tuning,
          );
    if (prefetch !== false) this.prefetch = (range) => this.#announce(range);
  }

  /** Checks the options and lists the files (a directory is listed now, once). */
  static async open(options: RecordIODataReaderOptions): Promise<RecordIODataReader> {
    const o = checkObject(options, 'options');
    const maxOpenFiles = FileDataReader.checkMaxOpenFiles(o);
    const onCorruptChunk = o.onCorruptChunk ?? 'error';
    if (onCorruptChunk !== 'error' && onCorruptChunk !== 'skip') {
      throw new TypeError(expectedMessage("'error' or 'skip'", 'options.onCorruptChunk', o.onCorruptChunk));
    }
    const remote = FileDataReader.checkRemote(o);
    const files = await FileDataReader.listFiles(o, RECORDIO);
    const prefetch = checkPrefetchOptions(o.prefetch);
    const given =
      o.prefetch === undefined || o.prefetch === false
        ? o.prefetch
        : ({ ...(o.prefetch as object) } as JsonObject);
    return new RecordIODataReader(
      files,
      maxOpenFiles,
      onCorruptChunk as 'error' | 'skip',
      prefetch,
      given,
      remote,
    );
  }

  /** Files open now, and files opened since the reader was made (reuses of an open file not counted). */
  get openFiles(): { readonly open: number; readonly opened: number } {
    return { open: this.cache.size, opened: this.cache.opened };
  }

  /** The native prefetcher's counters, once it has started (undefined with `prefetch: false`). */
  get prefetchStats(): Prefetcher['stats'] | undefined {
    return this.#ranges?.prefetcher?.stats;
  }

  protected override async openFile(path: string, object: ObjectStat): Promise<RecordIOReader> {
    const reader = await RecordIOReader.open(path, { onCorruptChunk: this.#onCorruptChunk });
    this.#storedOnly.set(
      object.location,
      reader.chunks.every((chunk) => chunk.compressor === 'none'),
    );
    return reader;
  }

  #announce(range: RecordRange): void {
    if (this.closed || this.#ranges === undefined || this.announceRemote(range)) return;
    let checked: { shardName: string; start: number; end: number };
    try {
      checked = checkRange(range);
    } catch {
      return;
    }
    if (!this.owns(checked.shardName) || checked.end <= checked.start) return;
    const fileRange = { path: checked.shardName, start: checked.start, count: checked.end - checked.start };
    if (this.#storedDirect) {
      const storedOnly = this.#storedOnly.get(fileRange.path);
      if (storedOnly === true) return;
      if (storedOnly === undefined) {
        // Whether the file is read directly is known once it is open: a range of a stored file
        // announced before that would start the prefetcher's threads for nothing.
        this.#announceWhenOpen(fileRange);
        return;
      }
    }
    this.#announceNow(fileRange);
  }

  #announceNow(range: FileRange): void {
    try {
      this.#ranges?.announce(range);
    } catch {
      // Advisory only: the same failure (a prefetcher that cannot start) comes back from readRecords.
    }
  }

  /** Opens the file of `range`, then announces the range if the file is compressed and unread. */
  #announceWhenOpen(range: FileRange): void {
    const key = fileRangeKey(range);
    this.#awaitingOpen.add(key);
    this.cache.acquire(range.path).then(
      () => {
        this.cache.release(range.path);
        // Not when its read began meanwhile: it is being read already.
        if (!this.#awaitingOpen.delete(key) || this.closed) return;
        if (this.#storedOnly.get(range.path) === false) this.#announceNow(range);
      },
      () => {
        // The read of the range reports the same failure.
        this.#awaitingOpen.delete(key);
      },
    );
  }

  /**
   * The batches of records `[start, end)` as the native core decoded them: through the native
   * prefetcher (the batches of the same range announced with `prefetch`, or of one queued now), or
   * with `prefetch: false` straight from the file. Release each batch when its records are no
   * longer needed: its buffers then go back to the decoder instead of waiting for garbage
   * collection. Corrupt data ends the range with a `RecordIOError` after the records before it;
   * other ranges are not affected.
   */
  protected override batchesOf(
    reader: RecordIOReader,
    location: string,
    start: number,
    end: number,
  ): AsyncIterable<RecordBatch> {
    const fileRange = { path: location, start, count: end - start };
    if (this.#awaitingOpen.size > 0) this.#awaitingOpen.delete(fileRangeKey(fileRange));
    // Ranges of stored files are never announced to the prefetcher with storedFiles: 'direct'.
    if (this.#ranges === undefined || (this.#storedDirect && this.#storedOnly.get(location) === true)) {
      return reader.batches(start, end - start);
    }
    return this.#ranges.read(fileRange);
  }

  protected override formatParams(): JsonObject {
    const params: JsonObject = { maxOpenFiles: this.maxOpenFiles, onCorruptChunk: this.#onCorruptChunk };
    if (this.#prefetchParam !== undefined) {
      params.prefetch = this.#prefetchParam === false ? false : { ...this.#prefetchParam };
    }
    return params;
  }

  /** Stops the prefetcher's threads; the base closes every open file. */
  protected override closeFormat(): void {
    this.#ranges?.close();
    this.#tuning?.close();
  }
}

type ResolvedPrefetchOptions = Required<RecordIOPrefetchOptions>;

const DEFAULT_THREADS = availableParallelism() > 1 ? 2 : 1;
const DEFAULT_BUFFERED_BYTES = 64 * MIB;

/** Threads an `'auto'` read-ahead starts at most: decoding past this rarely keeps up with more. */
const MAX_AUTO_THREADS = 4;

/**
 * The prefetcher's threads and read-ahead bytes, `'auto'` ones as the most the tuner may use,
 * from the data budgets now: the CPU budget plus the consumer's core, which the tuner lends while
 * the consumer waits, and a quarter of the RAM budget (at most the default), so that the tuned
 * dataset stages keep the rest.
 */
function resolveAuto(prefetch: ResolvedPrefetchOptions): { threads: number; maxBufferedBytes: number } {
  const budgets = autotuneBudgets();
  return {
    threads:
      prefetch.threads === 'auto'
        ? Math.max(1, Math.min(MAX_AUTO_THREADS, budgets.cpuBudget + 1, availableParallelism()))
        : prefetch.threads,
    maxBufferedBytes:
      prefetch.maxBufferedBytes === 'auto'
        ? Math.max(MIB, Math.min(DEFAULT_BUFFERED_BYTES, Math.floor(budgets.ramBudgetBytes / 4)))
        : prefetch.maxBufferedBytes,
  };
}

function checkPrefetchOptions(value: unknown): ResolvedPrefetchOptions | false {
  if (value === false) return false;
  const o = checkObject(value ?? {}, 'options.prefetch');
  for (const key of Object.keys(o)) {
    if (!PREFETCH_KEYS.includes(key)) {
      throw new TypeError(
        expectedMessage(`one of ${PREFETCH_KEYS.join(', ')}`, 'a key of options.prefetch', key),
      );
    }
  }
  return {
    threads:
      o.threads === 'auto'
        ? 'auto'
        : checkOptionalInteger(o.threads, 'options.prefetch.threads', DEFAULT_THREADS, 0, 64),
    batchSize: checkOptionalInteger(o.batchSize, 'options.prefetch.batchSize', 4096, 1, 1 << 20),
    maxBufferedBytes:
      o.maxBufferedBytes === 'auto'
        ? 'auto'
        : checkOptionalInteger(
            o.maxBufferedBytes,
            'options.prefetch.maxBufferedBytes',
            DEFAULT_BUFFERED_BYTES,
            1,
            Number.MAX_SAFE_INTEGER,
          ),
    storedFiles: checkStoredFiles(o.storedFiles),
  };
}

function checkStoredFiles(value: unknown): 'direct' | 'prefetch' {
  if (value === undefined) return 'direct';
  if (value !== 'direct' && value !== 'prefetch') {
    throw new TypeError(expectedMessage("'direct' or 'prefetch'", 'options.prefetch.storedFiles', value));
  }
  return value;
}
