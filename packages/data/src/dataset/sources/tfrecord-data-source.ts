import { invalidArgument } from '@edl/common';
import { TFRecordReader } from '@edl/recordio';
import type { DataSourceDescription, RandomAccessDataSource } from '../../protocols.js';
import { DatasetError } from '../errors.js';
import { locateRecord } from './locate-record.js';

/**
 * Random access to the records of uncompressed TFRecord files, in order, as one source (Grain's
 * `ArrayRecordDataSource` for TFRecord). The record offsets come from a native scan of the headers
 * at open; `get(i)` reads one record's frame and checks both CRCs. Compressed (GZIP/ZLIB) files
 * cannot be read at random: opening one fails with `NOT_SEEKABLE` (read them with
 * `TFRecordDataReader`, which reads in order).
 *
 * Re-created elsewhere from `describe()`: `await TFRecordDataSource.fromDescription(d)`.
 */
export class TFRecordDataSource implements RandomAccessDataSource<Uint8Array> {
  readonly paths: readonly string[];
  readonly length: number;
  readonly #readers: readonly TFRecordReader[];
  readonly #starts: readonly number[];

  private constructor(paths: readonly string[], readers: TFRecordReader[]) {
    this.paths = paths;
    this.#readers = readers;
    const starts = [0];
    for (const reader of readers) starts.push((starts[starts.length - 1] as number) + reader.numRecords);
    this.#starts = starts;
    this.length = starts[starts.length - 1] as number;
  }

  /**
   * Opens and indexes the files.
   *
   * @throws TFRecordError `NOT_SEEKABLE` for a compressed file; the first damaged frame found by
   * the scan (its `tailFault`), since a source must serve every index it counts.
   */
  static async open(paths: string | readonly string[]): Promise<TFRecordDataSource> {
    const list = typeof paths === 'string' ? [paths] : paths;
    if (!Array.isArray(list) || list.length === 0 || list.some((p) => typeof p !== 'string')) {
      invalidArgument('a path or a non-empty array of paths', 'paths', paths, 'type');
    }
    const readers: TFRecordReader[] = [];
    try {
      for (const path of list) {
        const reader = await TFRecordReader.open(path);
        readers.push(reader);
        if (!reader.seekable) reader.recordOffset(0); // throws NOT_SEEKABLE with the file named
        const fault = reader.tailFault();
        if (fault !== undefined) throw fault;
      }
    } catch (error) {
      for (const reader of readers) reader.close();
      throw error;
    }
    return new TFRecordDataSource([...list], readers);
  }

  /** Re-creates a source from `describe()`'s output. */
  static async fromDescription(description: DataSourceDescription): Promise<TFRecordDataSource> {
    const paths = description?.paths;
    if (
      description?.type !== 'tfrecord' ||
      !Array.isArray(paths) ||
      !paths.every((p) => typeof p === 'string')
    ) {
      throw new DatasetError(
        'ERR_SOURCE',
        `Expected a description { type: 'tfrecord', paths } but received ${JSON.stringify(description)}`,
      );
    }
    return TFRecordDataSource.open(paths as string[]);
  }

  /** Record `index` of the concatenated files. */
  get(index: number): Promise<Uint8Array> {
    const [file, local] = locateRecord(this.#starts, index);
    return (this.#readers[file] as TFRecordReader).get(local);
  }

  /** Several records; neighbours in one file are read together. */
  getMany(indices: readonly number[]): Promise<Uint8Array[]> {
    return Promise.all(indices.map((index) => this.get(index)));
  }

  describe(): DataSourceDescription {
    return { type: 'tfrecord', paths: [...this.paths] };
  }

  /** Closes the files; idempotent. */
  close(): void {
    for (const reader of this.#readers) reader.close();
  }

  toString(): string {
    return `TFRecordDataSource(${this.paths.length} files, ${this.length} records)`;
  }
}
