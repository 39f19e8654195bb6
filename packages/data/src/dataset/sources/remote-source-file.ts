// The remote-object core (index loading, block decoding) lives beside the readers in
// readers/remote/: the Grain sources share it rather than repeat it. Only those three modules are
// imported, never the readers' index, so @edl/data/dataset loads no DataReader (subpaths.test.ts).
import { checkNonEmptyString, checkOptionalInteger, checkOptions } from '@edl/common';
import { type IndexedBlock, type RecordBatch, type SidecarIndex, TFRecordError } from '@edl/recordio';
import type { ByteSource, ObjectStat } from '@edl/storage';
import { defaultIndexCacheDir, IndexCache } from '../../readers/remote/index-cache.js';
import { RemoteFile, type RemoteFileStats } from '../../readers/remote/remote-file.js';
import { loadRemoteIndex } from '../../readers/remote/remote-index.js';

/** How a Grain source reads objects with no local path (S3, HTTP). Every field is optional. */
export interface RemoteSourceOptions {
  /** Decoded blocks (RecordIO chunks, TFRecord blocks of ~64 KiB) kept for reuse, in bytes, over all files. Default 32 MiB. */
  readonly cacheBytes?: number;
  /** Ranged GETs in flight at once, over all files of the source. Default 8. */
  readonly maxInFlight?: number;
  /** Where indexes are cached. Default `EDL_INDEX_CACHE_DIR`, else `~/.cache/elasticdl-ts/index`. */
  readonly indexCacheDir?: string;
}

const KEYS = ['cacheBytes', 'maxInFlight', 'indexCacheDir'];
const MIB = 1024 * 1024;

/**
 * What the remote files of one source share: the LRU of decoded blocks (bounded in bytes, whatever
 * the number of files), the bound on GETs in flight, and the index cache.
 */
export class RemoteBlocks {
  readonly indexCache: IndexCache;
  readonly #cacheBytes: number;
  readonly #maxInFlight: number;
  /** Most recently used last; a pending load counts 0 bytes until it resolves. */
  readonly #blocks = new Map<string, { batch: Promise<RecordBatch>; bytes: number }>();
  #heldBytes = 0;
  #inFlight = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(options: RemoteSourceOptions | undefined) {
    const o = checkOptions(options, 'options.remote', KEYS);
    this.#cacheBytes = checkOptionalInteger(
      o.cacheBytes,
      'options.remote.cacheBytes',
      32 * MIB,
      0,
      Number.MAX_SAFE_INTEGER,
    );
    this.#maxInFlight = checkOptionalInteger(o.maxInFlight, 'options.remote.maxInFlight', 8, 1, 256);
    this.indexCache = new IndexCache(
      o.indexCacheDir === undefined
        ? defaultIndexCacheDir()
        : checkNonEmptyString(o.indexCacheDir, 'options.remote.indexCacheDir'),
    );
  }

  /** Block `key`'s decoded records: from the cache, or loaded now (concurrent gets share one load). */
  block(key: string, load: () => Promise<RecordBatch>): Promise<RecordBatch> {
    const cached = this.#blocks.get(key);
    if (cached !== undefined) {
      this.#blocks.delete(key);
      this.#blocks.set(key, cached);
      return cached.batch;
    }
    const entry = { batch: this.#limited(load), bytes: 0 };
    this.#blocks.set(key, entry);
    entry.batch.then(
      (batch) => {
        if (this.#blocks.get(key) !== entry) return;
        entry.bytes = batch.data.byteLength;
        this.#heldBytes += entry.bytes;
        this.#evict();
      },
      // A failed load is not kept: the next get tries again.
      () => {
        if (this.#blocks.get(key) === entry) this.#blocks.delete(key);
      },
    );
    return entry.batch;
  }

  clear(): void {
    this.#blocks.clear();
    this.#heldBytes = 0;
  }

  /** Drops least recently used blocks while over the budget, always keeping the newest. */
  #evict(): void {
    for (const [key, entry] of this.#blocks) {
      if (this.#heldBytes <= this.#cacheBytes || this.#blocks.size <= 1) return;
      this.#blocks.delete(key);
      this.#heldBytes -= entry.bytes;
    }
  }

  async #limited<T>(task: () => Promise<T>): Promise<T> {
    while (this.#inFlight >= this.#maxInFlight) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
    }
    this.#inFlight++;
    try {
      return await task();
    } finally {
      this.#inFlight--;
      this.#waiting.shift()?.();
    }
  }
}

/**
 * One remote object of a Grain source: random access to its records through its index (the local
 * index cache, its sidecar `.idx`, else a header walk, as the readers find it), one ranged GET per
 * block read (pinned to the version it was opened at: a replaced object fails with `CHANGED`),
 * decoded natively from memory with the same checks and errors as a local file.
 */
export class RemoteSourceFile {
  readonly numRecords: number;
  readonly #file: RemoteFile;
  readonly #blocks: RemoteBlocks;

  private constructor(file: RemoteFile, blocks: RemoteBlocks) {
    this.#file = file;
    this.#blocks = blocks;
    this.numRecords = file.numRecords;
  }

  /**
   * Indexes `object`.
   *
   * @throws TFRecordError `NOT_SEEKABLE` for a GZIP/ZLIB TFRecord object (no record offsets); the
   * fault of a damaged object, found by the header walk.
   */
  static async open(
    format: SidecarIndex['format'],
    source: ByteSource,
    object: ObjectStat,
    blocks: RemoteBlocks,
  ): Promise<RemoteSourceFile> {
    const loaded = await loadRemoteIndex(format, source, object, blocks.indexCache);
    if ('compressed' in loaded) {
      throw new TFRecordError(
        'NOT_SEEKABLE',
        `random access needs record offsets, and this object is ${loaded.compressed}-compressed: ` +
          'read it in order with TFRecordDataReader, or store an uncompressed copy',
        { path: object.location },
      );
    }
    return new RemoteSourceFile(new RemoteFile(source, object, loaded.index, loaded.report), blocks);
  }

  /** How the object was indexed, and the data GETs and bytes so far. */
  get stats(): RemoteFileStats {
    return this.#file.stats();
  }

  /** Record `local` (a valid index), a view into its decoded block. */
  async get(local: number): Promise<Uint8Array> {
    const file = this.#file;
    const block = file.blockOf(local);
    const batch = await this.#blocks.block(`${file.location}\n${block}`, async () => {
      const { offset, byteLength, firstRecord, numRecords } = file.index.blocks[block] as IndexedBlock;
      file.dataRequests++;
      file.dataBytes += byteLength;
      const bytes = await file.source.readRange(file.object, offset, byteLength);
      return file.decode(bytes, block, block, firstRecord, firstRecord + numRecords, 'error');
    });
    return batch.get(local - batch.firstRecord);
  }

  /** Drops the decoded blocks (of every file of the source); reads are pinned requests, not open files. */
  close(): void {
    this.#blocks.clear();
  }
}
