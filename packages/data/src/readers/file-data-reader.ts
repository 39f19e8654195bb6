import { basename, dirname } from 'node:path';
import { checkNonEmptyString, checkOptionalInteger, expectedMessage } from '@edl/common';
import type { RecordBatch } from '@edl/recordio';
import {
  type ByteSource,
  byteSourceFor,
  compareCodeUnits,
  normalizeLocation,
  type ObjectStat,
  schemeOf,
} from '@edl/storage';
import type {
  DataReader,
  JsonObject,
  ReadAheadBudget,
  ReaderDescription,
  ReaderMetadata,
  RecordRange,
  Shard,
} from '../protocols.js';
import { recordsOfBatches } from '../records-of-batches.js';
import { checkRange } from './check-range.js';
import { DataReaderError } from './errors.js';
import { checkFileRange, checkWithinFile, listDataFiles } from './file-shards.js';
import { type Closable, ReaderCache } from './reader-cache.js';
import { checkRemoteOptions, type RemoteReadOptions } from './remote/remote-options.js';
import {
  isRemoteObject,
  type RemoteObject,
  type RemoteReadStats,
  RemoteReads,
} from './remote/remote-reads.js';

/**
 * Options every file reader takes: exactly one of `dataDir` and `files`, and `maxOpenFiles`.
 * Locations are local paths or `file:` URLs (and the URLs of any registered byte source).
 */
export type FileReaderOptions = (
  | {
      /** A directory: the format's files directly in it are read (hidden and sidecar files never). */
      readonly dataDir: string;
      readonly files?: undefined;
    }
  | {
      /** The files to read. */
      readonly files: readonly string[];
      readonly dataDir?: undefined;
    }
) & {
  /** Files kept open between tasks (least recently used closed first). Default 16. */
  readonly maxOpenFiles?: number;
  /** How objects with no local path (`s3://`, `https://`) are fetched; see {@link RemoteReadOptions}. */
  readonly remote?: RemoteReadOptions;
};

/** `options.remote`, checked: the settings and what was given. */
export type RemoteSettings = ReturnType<typeof checkRemoteOptions>;

/** What a file format tells the reader core: its names and which files in a directory are its own. */
export interface FileFormat {
  /** The reader type of `describe()` and `metadata.format`. */
  readonly type: 'recordio' | 'tfrecord';
  /** The format's name in messages (`RecordIO`). */
  readonly name: string;
  /** Whether a file of this name, in a listed directory, is read. */
  accepts(name: string): boolean;
  /** The `NO_FILES` message for a directory that holds none. */
  noFiles(dataDir: string): string;
}

/** A format's reader of one opened file, as the reader cache keeps it. */
export interface OpenedFile extends Closable {
  readonly numRecords: number;
}

/** The files of a file reader, in shard order, and the directory they were listed from. */
export interface FileList {
  readonly files: readonly string[];
  readonly dataDir: string | undefined;
  /**
   * Each file's stat: from the directory's listing, or (for `files`) taken when the reader is
   * opened, so that the first open of a file (and a range announced before it) does not wait for
   * an I/O round trip. A failed stat fails the open of its file, as the file's own open would.
   */
  readonly stats: ReadonlyMap<string, Promise<ObjectStat>>;
}

/**
 * The reader core of file formats (RecordIO, TFRecord): one shard per file, named by its location,
 * in the order of {@link FileDataReader.listFiles}; files opened through a {@link ReaderCache} (so
 * consecutive tasks of one shard reuse one open file); task ranges checked against the shard's
 * records; batches; `describe()`. A format adds only what differs: how a file is opened and
 * indexed, how a range's batches are read, and its own options.
 *
 * Files are found and stat'ed through their byte source (`@edl/storage`). The native readers open
 * what the source gives a local path for, and keep their own `pread` path and prefetch threads.
 * Objects with no local path (S3, HTTP) are read by {@link RemoteReads}: indexed once (sidecar
 * index, local cache or header walk), fetched by parallel ranged GETs of whole chunks or frame
 * blocks, read ahead as announced, and decoded natively from memory into the same batches.
 */
export abstract class FileDataReader<R extends OpenedFile> implements DataReader<Uint8Array> {
  readonly metadata: ReaderMetadata;
  /** The opened files (remote ones as {@link RemoteObject}s), least recently used closed first. */
  protected readonly cache: ReaderCache<R | RemoteObject>;
  /** Files kept open between tasks. */
  protected readonly maxOpenFiles: number;
  readonly #format: FileFormat;
  readonly #files: FileList;
  readonly #remote: RemoteReads;
  /** Remote files opened (indexed) at once by `createShards`: `remote.maxInFlight`. */
  readonly #remoteOpens: number;
  readonly #remoteParam: JsonObject | undefined;
  #closed = false;
  /**
   * `remote.readAheadBytes` against the bytes of announced remote ranges not read yet, so that a
   * worker holds as many tasks ahead as the read-ahead can fetch. Present only when some files are
   * remote (a local file's task is read when asked, one task ahead).
   */
  readonly readAheadBudget?: () => ReadAheadBudget;

  /**
   * @param remote - `options.remote`, checked ({@link FileDataReader.checkRemote}).
   * @param onCorruptChunk - what remote reads do with a corrupt RecordIO chunk.
   */
  protected constructor(
    format: FileFormat,
    files: FileList,
    maxOpenFiles: number,
    remote: RemoteSettings,
    onCorruptChunk: 'error' | 'skip' = 'error',
  ) {
    this.#format = format;
    this.#files = files;
    this.maxOpenFiles = maxOpenFiles;
    this.cache = new ReaderCache(maxOpenFiles, (location) => this.#openLocation(location));
    this.metadata = { format: format.type, files: files.files.length };
    this.#remoteParam = remote.given;
    this.#remoteOpens = remote.resolved.maxInFlight;
    this.#remote = new RemoteReads(format.type, remote.resolved, onCorruptChunk, (location) =>
      this.#resolve(location),
    );
    if (this.hasRemoteFiles) {
      const budgetBytes = remote.resolved.readAheadBytes;
      this.readAheadBudget = () => ({
        budgetBytes,
        announcedBytes: this.#remote.announcedBytes,
        wantedRanges: this.#remote.rangesWanted,
      });
    }
  }

  /** `options.remote`: how objects with no local path are fetched. */
  protected static checkRemote(options: Record<string, unknown>): RemoteSettings {
    return checkRemoteOptions(options.remote);
  }

  /** `options.maxOpenFiles`: files kept open between tasks (default 16). */
  protected static checkMaxOpenFiles(options: Record<string, unknown>): number {
    return checkOptionalInteger(options.maxOpenFiles, 'options.maxOpenFiles', 16, 1, 65_536);
  }

  /**
   * Exactly one of `options.dataDir` (listed now, once, through its byte source) and `options.files`
   * (stat'ed now, in parallel), as locations in code-unit order without duplicates.
   */
  protected static async listFiles(o: Record<string, unknown>, format: FileFormat): Promise<FileList> {
    if ((o.dataDir === undefined) === (o.files === undefined)) {
      throw new TypeError(expectedMessage('exactly one of dataDir and files', 'options', o));
    }
    let files: string[];
    let dataDir: string | undefined;
    const stats = new Map<string, Promise<ObjectStat>>();
    if (o.dataDir !== undefined) {
      dataDir = normalizeLocation(checkNonEmptyString(o.dataDir, 'options.dataDir'));
      for (const object of await listDataFiles(dataDir, format.accepts, format.noFiles(dataDir))) {
        stats.set(object.location, Promise.resolve(object));
      }
      files = [...stats.keys()];
    } else {
      if (!Array.isArray(o.files) || o.files.length === 0) {
        throw new TypeError(expectedMessage('a non-empty array of paths', 'options.files', o.files));
      }
      files = [
        ...new Set(o.files.map((f, i) => normalizeLocation(checkNonEmptyString(f, `options.files[${i}]`)))),
      ];
      for (const location of files) stats.set(location, statLater(location));
      await Promise.allSettled(stats.values());
    }
    files.sort(compareCodeUnits);
    return { files, dataDir, stats };
  }

  /** The files, in shard order. */
  get files(): readonly string[] {
    return this.#files.files;
  }

  /** Whether some files are remote (URLs other than `file:`), read by ranged GETs. */
  protected get hasRemoteFiles(): boolean {
    return this.#files.files.some(isRemoteLocation);
  }

  /**
   * Requests and bytes per remote file (how its index was found: local cache, sidecar or header
   * walk, and the requests that cost; data GETs and bytes), and the fetched bytes held now.
   */
  get remoteStats(): RemoteReadStats {
    return this.#remote.stats();
  }

  /** Whether {@link FileDataReader.close} was called. */
  protected get closed(): boolean {
    return this.#closed;
  }

  /** One shard `{ name: location, start: 0, count: numRecords }` per file that has records. */
  async createShards(): Promise<Shard[]> {
    this.#checkOpen();
    await this.#openRemoteFiles();
    const shards: Shard[] = [];
    for (const location of this.#files.files) {
      const reader = await this.cache.acquire(location);
      try {
        if (!isRemoteObject(reader)) this.checkWhole(reader);
        if (reader.numRecords > 0) shards.push({ name: location, start: 0, count: reader.numRecords });
      } finally {
        this.cache.release(location);
      }
    }
    return shards;
  }

  /**
   * Yields the records `[range.start, range.end)` of the file `range.shardName` a batch at a time
   * (see the format's {@link FileDataReader.batchesOf}).
   */
  async *readBatches(range: RecordRange): AsyncGenerator<RecordBatch> {
    this.#checkOpen();
    const { shardName, start, end } = checkFileRange(
      range,
      (location) => this.owns(location),
      this.#files.dataDir ?? `${this.#files.files.length} files`,
    );
    const reader = await this.cache.acquire(shardName);
    try {
      checkWithinFile(shardName, start, end, reader.numRecords);
      if (end <= start) return;
      if (isRemoteObject(reader)) yield* this.#remote.read(reader, start, end);
      else yield* this.batchesOf(reader, shardName, start, end);
    } finally {
      this.cache.release(shardName);
    }
  }

  /**
   * Yields records `[range.start, range.end)` of the file `range.shardName`, as views into the
   * batches of {@link FileDataReader.readBatches} (never released, so they stay valid).
   */
  readRecords(range: RecordRange): AsyncGenerator<Uint8Array> {
    return recordsOfBatches(this.readBatches(range));
  }

  /** `{ type, params }` with `dataDir` or `files` and the format's options, for `createDataReader`. */
  describe(): ReaderDescription {
    const { dataDir, files } = this.#files;
    const where: JsonObject = dataDir !== undefined ? { dataDir } : { files: [...files] };
    const params: JsonObject = { ...where, ...this.formatParams() };
    if (this.#remoteParam !== undefined) params.remote = { ...this.#remoteParam };
    return { type: this.#format.type, params };
  }

  /** Closes every open file (and what the format holds besides). Idempotent. */
  async close(): Promise<void> {
    this.#closed = true;
    this.closeFormat();
    this.#remote.close();
    await this.cache.closeAll();
  }

  /** A listed file, or (for a directory) any file of the format directly in it: the listing may have grown. */
  protected owns(location: string): boolean {
    if (this.#files.files.includes(location)) return true;
    const { dataDir } = this.#files;
    return (
      dataDir !== undefined &&
      dirname(location) === dataDir &&
      !location.endsWith('/') &&
      this.#format.accepts(basename(location))
    );
  }

  /**
   * Announces a range of a remote file, to be fetched ahead (see {@link RemoteReads}); returns
   * whether the range's shard is remote (a local one is the format's to announce). Advisory: an
   * invalid range announces nothing.
   */
  protected announceRemote(range: RecordRange): boolean {
    let checked: { shardName: string; start: number; end: number };
    try {
      checked = checkRange(range);
    } catch {
      return false;
    }
    if (!isRemoteLocation(checked.shardName)) return false;
    if (!this.#closed && this.owns(checked.shardName) && checked.end > checked.start) {
      this.#remote.announce(checked.shardName, checked.start, checked.end);
    }
    return true;
  }

  /** Opens the local file `path` (of `object`) in the format's native reader. */
  protected abstract openFile(path: string, object: ObjectStat): Promise<R>;

  /** The batches of records `[start, end)` (a non-empty range within the file) of an opened file. */
  protected abstract batchesOf(
    reader: R,
    location: string,
    start: number,
    end: number,
  ): AsyncIterable<RecordBatch>;

  /** The format's options for `describe()`, after `dataDir`/`files`. */
  protected abstract formatParams(): JsonObject;

  /** Throws when a file cannot be served whole (called by `createShards`, once per file). */
  protected checkWhole(_reader: R): void {}

  /** Releases what the format holds besides the open files. */
  protected closeFormat(): void {}

  /**
   * Opens the remote files up to `remote.maxInFlight` at once, so that their indexes (a sidecar GET,
   * or a header walk, a request per chunk) are found in parallel. Failures are left to `createShards`, which reports them in file
   * order (a failed open is tried again).
   */
  async #openRemoteFiles(): Promise<void> {
    const remote = this.#files.files.filter(isRemoteLocation);
    let next = 0;
    const opener = async (): Promise<void> => {
      while (next < remote.length) {
        const location = remote[next++] as string;
        await this.cache.acquire(location).then(
          () => this.cache.release(location),
          () => {},
        );
      }
    };
    await Promise.all(Array.from({ length: Math.min(this.#remoteOpens, remote.length) }, opener));
  }

  async #openLocation(location: string): Promise<R | RemoteObject> {
    const { source, object } = await this.#resolve(location);
    const path = source.localPath(object);
    if (path === undefined) return this.#remote.file(location);
    return this.openFile(path, object);
  }

  /** The byte source of `location` and its stat (from the listing when there was one). */
  async #resolve(location: string): Promise<{ source: ByteSource; object: ObjectStat }> {
    const source = await byteSourceFor(location);
    const object = await (this.#files.stats.get(location) ?? source.stat(location));
    return { source, object };
  }

  #checkOpen(): void {
    if (this.#closed) {
      throw new DataReaderError(
        'CLOSED',
        `the ${this.#format.name} reader of ${this.#files.dataDir ?? 'its files'} is closed`,
      );
    }
  }
}

/** Whether `location` is a URL of a scheme other than `file:` (its objects are read remotely). */
function isRemoteLocation(location: string): boolean {
  const scheme = schemeOf(location);
  return scheme !== undefined && scheme !== 'file';
}

/** The stat of `location` through its byte source, started now; a failure is reported where it is used. */
function statLater(location: string): Promise<ObjectStat> {
  const stat = byteSourceFor(location).then((source) => source.stat(location));
  stat.catch(() => {});
  return stat;
}
