import { TFRecordReader } from '@edl/recordio';
import type { DataSourceDescription } from '../../protocols.js';
import { checkSourcePaths, describedPaths, FileDataSource, openSourceFiles } from './file-data-source.js';
import type { RemoteSourceFile, RemoteSourceOptions } from './remote-source-file.js';

/** Options of `TFRecordDataSource.open`. */
export interface TFRecordDataSourceOptions {
  /** How objects with no local path (`s3://`, `https://`) are read. */
  readonly remote?: RemoteSourceOptions;
}

/**
 * Random access to the records of uncompressed TFRecord files, in order, as one source (Grain's
 * `ArrayRecordDataSource` for TFRecord). The record offsets come from a native scan of the headers
 * at open; `get(i)` reads one record's frame and checks both CRCs. Compressed (GZIP/ZLIB) files
 * cannot be read at random: opening one fails with `NOT_SEEKABLE` (read them with
 * `TFRecordDataReader`, which reads in order).
 *
 * A file is a local path or an object URL (`s3://bucket/key`, `https://...`): an object is indexed
 * as the readers index it (index cache, sidecar `.idx`, else a header walk) and read a block of
 * frames (about 64 KiB) per ranged GET, both CRCs checked, decoded blocks kept in an LRU bounded by
 * `remote.cacheBytes`.
 *
 * Re-created elsewhere from `describe()`: `await TFRecordDataSource.fromDescription(d)`.
 */
export class TFRecordDataSource extends FileDataSource<TFRecordReader | RemoteSourceFile> {
  private constructor(paths: readonly string[], readers: (TFRecordReader | RemoteSourceFile)[]) {
    super('tfrecord', 'TFRecordDataSource', paths, readers);
  }

  /**
   * Opens and indexes the files.
   *
   * @throws TFRecordError `NOT_SEEKABLE` for a compressed file; the first damaged frame found by
   * the scan (its `tailFault`), since a source must serve every index it counts.
   */
  static async open(
    paths: string | readonly string[],
    options: TFRecordDataSourceOptions = {},
  ): Promise<TFRecordDataSource> {
    const opened = await openSourceFiles(
      checkSourcePaths(paths),
      'tfrecord',
      options.remote,
      async (path) => {
        const reader = await TFRecordReader.open(path);
        try {
          if (!reader.seekable) reader.recordOffset(0); // throws NOT_SEEKABLE with the file named
          const fault = reader.tailFault();
          if (fault !== undefined) throw fault;
        } catch (error) {
          reader.close();
          throw error;
        }
        return reader;
      },
    );
    return new TFRecordDataSource(opened.paths, opened.readers);
  }

  /** Re-creates a source from `describe()`'s output. */
  static async fromDescription(description: DataSourceDescription): Promise<TFRecordDataSource> {
    return TFRecordDataSource.open(describedPaths(description, 'tfrecord'));
  }

  protected override recordOf(file: number, local: number): Promise<Uint8Array> {
    return (this.readers[file] as TFRecordReader | RemoteSourceFile).get(local);
  }
}
