import { checkInteger, invalidArgument } from '@edl/common';
import { type RecordBatch, RecordIOReader } from '@edl/recordio';
import type { DataSourceDescription, RandomAccessDataSource } from '../../protocols.js';
import { DatasetError } from '../errors.js';
import { locateRecord } from './locate-record.js';

/** Options of `RecordIODataSource.open`. */
export interface RecordIODataSourceOptions {
  /** Decoded chunks kept for reuse, over all files (default 8): neighbours share one decode. */
  readonly cacheChunks?: number;
}

/** The reader method a native chunk cache will add; used when present. */
type CachedReader = RecordIOReader & { get?: (index: number) => Uint8Array | Promise<Uint8Array> };

/**
 * Random access to the records of RecordIO files, in order, as one source (Grain's file sources).
 * Records are zero-copy views into decoded chunks. Until the reader has a native chunk cache, the
 * source keeps the last `cacheChunks` decoded chunks (concurrent reads of one chunk share a decode).
 *
 * Like Grain's picklable sources it is re-created elsewhere from `describe()`:
 * `await RecordIODataSource.fromDescription({ type: 'recordio', paths })`.
 */
export class RecordIODataSource implements RandomAccessDataSource<Uint8Array> {
  readonly paths: readonly string[];
  readonly length: number;
  readonly #readers: readonly CachedReader[];
  /** `#starts[f]`: index of the first record of file f; the last entry is the length. */
  readonly #starts: readonly number[];
  readonly #cacheChunks: number;
  readonly #cache = new Map<string, Promise<RecordBatch>>();

  private constructor(paths: readonly string[], readers: CachedReader[], cacheChunks: number) {
    this.paths = paths;
    this.#readers = readers;
    const starts = [0];
    for (const reader of readers) starts.push(starts[starts.length - 1]! + reader.numRecords);
    this.#starts = starts;
    this.length = starts[starts.length - 1]!;
    this.#cacheChunks = cacheChunks;
  }

  /** Opens the files (their chunk index is scanned once, natively). */
  static async open(
    paths: string | readonly string[],
    options: RecordIODataSourceOptions = {},
  ): Promise<RecordIODataSource> {
    const list = typeof paths === 'string' ? [paths] : paths;
    if (!Array.isArray(list) || list.length === 0 || list.some((p) => typeof p !== 'string')) {
      invalidArgument('a path or a non-empty array of paths', 'paths', paths, 'type');
    }
    const cacheChunks = checkInteger(options.cacheChunks ?? 8, 'options.cacheChunks', 1);
    const readers: CachedReader[] = [];
    try {
      for (const path of list) readers.push(await RecordIOReader.open(path));
    } catch (error) {
      for (const reader of readers) reader.close();
      throw error;
    }
    return new RecordIODataSource([...list], readers, cacheChunks);
  }

  /** Re-creates a source from `describe()`'s output. */
  static async fromDescription(description: DataSourceDescription): Promise<RecordIODataSource> {
    const paths = description?.paths;
    if (
      description?.type !== 'recordio' ||
      !Array.isArray(paths) ||
      !paths.every((p) => typeof p === 'string')
    ) {
      throw new DatasetError(
        'ERR_SOURCE',
        `Expected a description { type: 'recordio', paths } but received ${JSON.stringify(description)}`,
      );
    }
    return RecordIODataSource.open(paths as string[]);
  }

  /** Record `index` of the concatenated files. */
  async get(index: number): Promise<Uint8Array> {
    const [file, local] = locateRecord(this.#starts, index);
    const reader = this.#readers[file]!;
    if (typeof reader.get === 'function') return reader.get(local);
    const chunk = chunkOf(reader, local);
    const batch = await this.#chunk(file, chunk);
    return batch.get(local - batch.firstRecord);
  }

  /** Several records, each chunk decoded once. */
  getMany(indices: readonly number[]): Promise<Uint8Array[]> {
    return Promise.all(indices.map((index) => this.get(index)));
  }

  /** A plain description from which `fromDescription` re-creates this source in another process. */
  describe(): DataSourceDescription {
    return { type: 'recordio', paths: [...this.paths] };
  }

  /** Closes the files; idempotent. */
  close(): void {
    for (const reader of this.#readers) reader.close();
    this.#cache.clear();
  }

  toString(): string {
    return `RecordIODataSource(${this.paths.length} files, ${this.length} records)`;
  }

  /** The decoded chunk, from the cache (most recently used last) or read now. */
  #chunk(file: number, chunk: number): Promise<RecordBatch> {
    const key = `${file}:${chunk}`;
    let batch = this.#cache.get(key);
    if (batch !== undefined) {
      this.#cache.delete(key);
    } else {
      const info = this.#readers[file]!.chunks[chunk]!;
      batch = this.#readers[file]!.read(info.firstRecord, info.numRecords);
      // A failed read is not cached: the next get tries again.
      batch.catch(() => this.#cache.delete(key));
    }
    this.#cache.set(key, batch);
    while (this.#cache.size > this.#cacheChunks)
      this.#cache.delete(this.#cache.keys().next().value as string);
    return batch;
  }
}

/** Index of the chunk holding record `local` (binary search over the reader's chunk table). */
function chunkOf(reader: RecordIOReader, local: number): number {
  const chunks = reader.chunks;
  let lo = 0;
  let hi = chunks.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >>> 1;
    if (chunks[mid]!.firstRecord <= local) lo = mid;
    else hi = mid - 1;
  }
  // Chunks without records share their firstRecord with the next one: step back to a non-empty one.
  while (lo > 0 && chunks[lo]!.numRecords === 0) lo--;
  return lo;
}
