import type { BigIntStats } from 'node:fs';
import { open, readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { checkInteger, invalidArgument } from '@edl/common';
import type { ByteSource, ObjectStat, ReadRangeOptions } from './byte-source.js';
import { compareCodeUnits, isListedName, normalizeLocation } from './locations.js';
import { StorageError } from './storage-error.js';

/**
 * Local files as a {@link ByteSource}: plain paths (resolved against the current directory) and
 * `file:` URLs. Objects are named by their absolute path, and pinned to their modification time,
 * size and inode, so that a file rewritten or replaced (renamed over) after it was stat'ed fails
 * the reads of the old version. The native readers keep opening these files themselves
 * ({@link LocalFileSource.localPath}), with their own `pread` path and prefetch threads.
 */
export class LocalFileSource implements ByteSource {
  readonly scheme = 'file';

  /**
   * A directory's regular files directly in it, sorted by path in code-unit order (the same on
   * every machine and locale), without hidden files (a name starting with `.`) and readers'
   * sidecar files; or the one file a file location names.
   *
   * @throws StorageError `IO` when the location does not exist or cannot be listed.
   */
  async list(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat[]> {
    const path = normalizeLocation(location);
    const info = await statOf(path, options?.signal);
    if (!info.isDirectory()) return [toObjectStat(path, info)];
    let names: string[];
    try {
      names = await readdir(path);
    } catch (error) {
      throw ioError(path, 'cannot list', error);
    }
    const files: ObjectStat[] = [];
    for (const name of names.filter(isListedName).sort(compareCodeUnits)) {
      options?.signal?.throwIfAborted();
      const file = join(path, name);
      const entry = await stat(file, { bigint: true }).catch(() => undefined);
      // An entry removed while the directory is listed is not one of its files any more.
      if (entry?.isFile() === true) files.push(toObjectStat(file, entry));
    }
    return files;
  }

  /**
   * The file at `location` as it is now.
   *
   * @throws StorageError `IO` when it does not exist, cannot be stat'ed or is not a regular file.
   */
  async stat(location: string, options?: { readonly signal?: AbortSignal }): Promise<ObjectStat> {
    const path = normalizeLocation(location);
    const info = await statOf(path, options?.signal);
    if (!info.isFile()) throw new StorageError('IO', path, 'not a regular file');
    return toObjectStat(path, info);
  }

  /**
   * Bytes `[offset, offset + length)` of the file, read into `options.into` when given.
   *
   * @throws RangeError for a bad offset, length or `into`; StorageError `OUT_OF_RANGE` for a range
   * past the end of the file as stat'ed, `CHANGED` when the file is not the version stat'ed any
   * more, `IO` when it cannot be read.
   */
  async readRange(
    object: ObjectStat,
    offset: number,
    length: number,
    options?: ReadRangeOptions,
  ): Promise<Uint8Array> {
    checkInteger(offset, 'offset', 0, Number.MAX_SAFE_INTEGER);
    checkInteger(length, 'length', 0, Number.MAX_SAFE_INTEGER);
    const path = object.location;
    if (offset + length > object.size) {
      throw new StorageError(
        'OUT_OF_RANGE',
        path,
        `bytes [${offset}, ${offset + length}) lie past the end of its ${object.size} bytes`,
      );
    }
    const into = options?.into;
    if (into !== undefined && !(into instanceof Uint8Array && into.byteLength >= length)) {
      invalidArgument(`a Uint8Array of at least ${length} bytes`, 'options.into', into);
    }
    options?.signal?.throwIfAborted();
    const buffer = into === undefined ? new Uint8Array(length) : into.subarray(0, length);
    let handle: Awaited<ReturnType<typeof open>>;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      throw ioError(path, 'cannot open', error);
    }
    try {
      const now = await handle.stat({ bigint: true });
      if (versionOf(now) !== object.version) throw changedError(object, now.size);
      let got = 0;
      while (got < length) {
        options?.signal?.throwIfAborted();
        const { bytesRead } = await handle.read(buffer, got, length - got, offset + got);
        if (bytesRead === 0) throw changedError(object, BigInt(offset + got));
        got += bytesRead;
      }
      return buffer;
    } catch (error) {
      if (error instanceof StorageError || options?.signal?.aborted === true) throw error;
      throw ioError(path, 'cannot read', error);
    } finally {
      await handle.close();
    }
  }

  /** The file's path: the native readers open it themselves. */
  localPath(object: ObjectStat): string | undefined {
    return object.location;
  }
}

/** The one local-file source: it holds no state. */
export const localFiles: LocalFileSource = new LocalFileSource();

async function statOf(path: string, signal: AbortSignal | undefined): Promise<BigIntStats> {
  signal?.throwIfAborted();
  try {
    return await stat(path, { bigint: true });
  } catch (error) {
    throw ioError(path, 'cannot stat', error);
  }
}

/** Modification time (ns), size and inode: a rewrite changes the first two, a rename-over the last. */
function versionOf(info: BigIntStats): string {
  return `${info.mtimeNs}-${info.size}-${info.ino}`;
}

function toObjectStat(path: string, info: BigIntStats): ObjectStat {
  return { location: path, size: Number(info.size), version: versionOf(info) };
}

function ioError(path: string, what: string, error: unknown): StorageError {
  return new StorageError('IO', path, `${what}: ${(error as Error).message}`, error);
}

function changedError(object: ObjectStat, size: bigint): StorageError {
  return new StorageError(
    'CHANGED',
    object.location,
    `the file changed since it was opened (it was ${object.size} bytes, version ${object.version}; now ${size} bytes or replaced); open it again`,
  );
}
