import { invalidArgument } from '@edl/common';
import { byteSourceFor } from '@edl/storage';
import type { DataSourceDescription, RandomAccessDataSource } from '../../protocols.js';
import { DatasetError } from '../errors.js';
import { locateRecord } from './locate-record.js';

/** A format's reader of one opened file, as a source holds it. */
export interface SourceFile {
  readonly numRecords: number;
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
 * Opens every file of `list` with `open`, given the local path its byte source has for it; closes
 * those already open when one fails.
 */
export async function openSourceFiles<R extends SourceFile>(
  list: readonly string[],
  open: (path: string) => Promise<R>,
): Promise<{ paths: string[]; readers: R[] }> {
  const readers: R[] = [];
  try {
    for (const location of list) {
      const source = await byteSourceFor(location);
      const local = source.localPath(await source.stat(location));
      if (local === undefined) {
        throw new DatasetError(
          'ERR_SOURCE',
          `${location}: file sources read local files only, and ${source.scheme}: objects have no local path`,
        );
      }
      readers.push(await open(local));
    }
  } catch (error) {
    for (const reader of readers) reader.close();
    throw error;
  }
  return { paths: [...list], readers };
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
