import { checkInteger } from '@edl/common';
import { type RecordBatch, RecordIOReader } from '@edl/recordio';
import type { DataSourceDescription } from '../../protocols.js';
import { checkSourcePaths, describedPaths, FileDataSource, openSourceFiles } from './file-data-source.js';
import type { RemoteSourceFile, RemoteSourceOptions } from './remote-source-file.js';

/** Options of `RecordIODataSource.open`. */
export interface RecordIODataSourceOptions {
  /** Decoded chunks kept for reuse, over all files (default 8): neighbours share one decode. */
  readonly cacheChunks?: number;
  /** How objects with no local path (`s3://`, `https://`) are read. */
  readonly remote?: RemoteSourceOptions;
}

/** The reader method a native chunk cache will add; used when present. */
type CachedReader =
  | (RecordIOReader & { get?: (index: number) => Uint8Array | Promise<Uint8Array> })
  | RemoteSourceFile;

/**
 * Random access to the records of RecordIO files, in order, as one source (Grain's file sources).
 * A file is a local path or an object URL (`s3://bucket/key`, `https://...`): an object is indexed
 * as the readers index it (index cache, sidecar `.idx`, else a header walk) and read a chunk per
 * ranged GET, its decoded chunks kept in an LRU bounded by `remote.cacheBytes`.
 * Records are zero-copy views into decoded chunks. Until the reader has a native chunk cache, the
 * source keeps the last `cacheChunks` decoded chunks (concurrent reads of one chunk share a decode,
 * and `getMany` decodes each chunk once).
 *
 * Like Grain's picklable sources it is re-created elsewhere from `describe()`:
 * `await RecordIODataSource.fromDescription({ type: 'recordio', paths })`.
 */
export class RecordIODataSource extends FileDataSource<CachedReader> {
  readonly #cacheChunks: number;
  readonly #cache = new Map<string, Promise<RecordBatch>>();

  private constructor(paths: readonly string[], readers: CachedReader[], cacheChunks: number) {
    super('recordio', 'RecordIODataSource', paths, readers);
    this.#cacheChunks = cacheChunks;
  }

  /** Opens the files (their chunk index is scanned once, natively). */
  static async open(
    paths: string | readonly string[],
    options: RecordIODataSourceOptions = {},
  ): Promise<RecordIODataSource> {
    const list = checkSourcePaths(paths);
    const cacheChunks = checkInteger(options.cacheChunks ?? 8, 'options.cacheChunks', 1);
    const opened = await openSourceFiles(list, 'recordio', options.remote, (path) =>
      RecordIOReader.open(path),
    );
    return new RecordIODataSource(opened.paths, opened.readers, cacheChunks);
  }

  /** Re-creates a source from `describe()`'s output. */
  static async fromDescription(description: DataSourceDescription): Promise<RecordIODataSource> {
    return RecordIODataSource.open(describedPaths(description, 'recordio'));
  }

  /** Closes the files; idempotent. */
  override close(): void {
    super.close();
    this.#cache.clear();
  }

  protected override async recordOf(file: number, local: number): Promise<Uint8Array> {
    const reader = this.readers[file] as CachedReader;
    if (typeof reader.get === 'function') return reader.get(local);
    const batch = await this.#chunk(file, chunkOf(reader as RecordIOReader, local));
    return batch.get(local - batch.firstRecord);
  }

  /** The decoded chunk, from the cache (most recently used last) or read now. */
  #chunk(file: number, chunk: number): Promise<RecordBatch> {
    const key = `${file}:${chunk}`;
    let batch = this.#cache.get(key);
    if (batch !== undefined) {
      this.#cache.delete(key);
    } else {
      const reader = this.readers[file] as RecordIOReader;
      const info = reader.chunks[chunk]!;
      batch = reader.read(info.firstRecord, info.numRecords);
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
