import { invalidArgument } from '@edl/common';
import { RecordIOError, type SidecarIndex } from '@edl/recordio';
import { type ByteSource, byteSourceFor, type ObjectStat } from '@edl/storage';
import type { DataSourceDescription, RandomAccessDataSource } from '../../protocols.js';
import type { RemoteFileStats } from '../../readers/remote/remote-file.js';
import { DatasetError } from '../errors.js';
import { locateRecord } from './locate-record.js';
import { RemoteBlocks, RemoteSourceFile, type RemoteSourceOptions } from './remote-source-file.js';

/** A format's reader of one opened file (a local file's native reader, or a remote object), as a source holds it. */
export interface SourceFile {
  readonly numRecords: number;
  /** Record `local` of the file (a valid index). */
  get(local: number): Promise<Uint8Array>;
  close(): void;
}

/** The file sources' types, as `describe()` names them. */
export type FileSourceType = 'recordio' | 'tfrecord';

/**
 * The core of Grain-style sources over files (RecordIO, TFRecord): random access to the records of
 * several files read one after another, `getMany`, `describe()` (re-created elsewhere by the
 * format's `fromDescription`), `close` and `toString`. A format adds only how a file is opened and
 * how one of its records is read.
 */
export abstract class FileDataSource<R extends SourceFile> implements RandomAccessDataSource<Uint8Array> {
  readonly paths: readonly string[];
  readonly length: number;
  /** The opened files, in the order of `paths`. */
  protected readonly readers: readonly R[];
  readonly #type: FileSourceType;
  readonly #className: string;
  /** `#starts[f]`: index of the first record of file f; the last entry is the length. */
  readonly #starts: readonly number[];

  protected constructor(
    type: FileSourceType,
    className: string,
    paths: readonly string[],
    readers: readonly R[],
  ) {
    this.#type = type;
    this.#className = className;
    this.paths = paths;
    this.readers = readers;
    const starts = [0];
    for (const reader of readers) starts.push((starts[starts.length - 1] as number) + reader.numRecords);
    this.#starts = starts;
    this.length = starts[starts.length - 1] as number;
  }

  /** Record `index` of the concatenated files; a bad index rejects (RangeError, TypeError). */
  get(index: number): Promise<Uint8Array> {
    let at: [file: number, local: number];
    try {
      at = locateRecord(this.#starts, index);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.recordOf(at[0], at[1]);
  }

  /** Several records (each format reads neighbours together). */
  getMany(indices: readonly number[]): Promise<Uint8Array[]> {
    return Promise.all(indices.map((index) => this.get(index)));
  }

  /** A plain description from which the format's `fromDescription` re-creates this source in another process. */
  describe(): DataSourceDescription {
    return { type: this.#type, paths: [...this.paths] };
  }

  /** Closes the files; idempotent. */
  close(): void {
    for (const reader of this.readers) reader.close();
  }

  /** Per remote object (S3, HTTP): how it was indexed, and the data GETs and bytes so far. Empty for local files. */
  get remoteStats(): RemoteFileStats[] {
    return this.readers.flatMap((reader) => (reader instanceof RemoteSourceFile ? [reader.stats] : []));
  }

  toString(): string {
    return `${this.#className}(${this.paths.length} files, ${this.length} records)`;
  }

  /** Record `local` of file `file` (a valid index). */
  protected abstract recordOf(file: number, local: number): Promise<Uint8Array>;
}

/** `paths` of a source's `open`: one location, or a non-empty array of them. */
export function checkSourcePaths(paths: string | readonly string[]): readonly string[] {
  const list = typeof paths === 'string' ? [paths] : paths;
  if (!Array.isArray(list) || list.length === 0 || list.some((p) => typeof p !== 'string')) {
    invalidArgument('a path or a non-empty array of paths', 'paths', paths, 'type');
  }
  return list;
}

/**
 * Opens every file of `list`: one with a local path (a plain path, `file:`) with `open`, given that
 * path; an object without one (`s3://`, `https://`) as a {@link RemoteSourceFile} of `format`, its
 * blocks cached and fetched as `remote` says. Closes those already open when one fails.
 */
export async function openSourceFiles<R extends SourceFile>(
  list: readonly string[],
  format: SidecarIndex['format'],
  remote: RemoteSourceOptions | undefined,
  open: (path: string) => Promise<R>,
): Promise<{ paths: string[]; readers: (R | RemoteSourceFile)[] }> {
  const blocks = new RemoteBlocks(remote);
  const readers: (R | RemoteSourceFile)[] = [];
  try {
    for (const location of list) {
      const source = await byteSourceFor(location);
      const object = await source.stat(location);
      const local = source.localPath(object);
      readers.push(
        local === undefined ? await openRemote(format, source, object, blocks) : await open(local),
      );
    }
  } catch (error) {
    for (const reader of readers) reader.close();
    throw error;
  }
  return { paths: [...list], readers };
}

/**
 * A remote object as a source file. A fault of the data (a `RecordIOError` or `TFRecordError`,
 * `NOT_SEEKABLE` included) is raised as a local open raises it; any other failure to index the
 * object (its sidecar or a header unreadable) is `ERR_SOURCE` naming the object.
 */
async function openRemote(
  format: SidecarIndex['format'],
  source: ByteSource,
  object: ObjectStat,
  blocks: RemoteBlocks,
): Promise<RemoteSourceFile> {
  try {
    return await RemoteSourceFile.open(format, source, object, blocks);
  } catch (error) {
    if (error instanceof RecordIOError) throw error;
    throw new DatasetError('ERR_SOURCE', `cannot open ${object.location}: ${(error as Error).message}`, {
      cause: error,
    });
  }
}

/** The paths of a description `{ type, paths }` of a `type` source, or `ERR_SOURCE`. */
export function describedPaths(description: DataSourceDescription, type: FileSourceType): string[] {
  const paths = description?.paths;
  if (description?.type !== type || !Array.isArray(paths) || !paths.every((p) => typeof p === 'string')) {
    throw new DatasetError(
      'ERR_SOURCE',
      `Expected a description { type: '${type}', paths } but received ${JSON.stringify(description)}`,
    );
  }
  return paths as string[];
}
