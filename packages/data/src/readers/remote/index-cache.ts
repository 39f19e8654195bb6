import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { decodeSidecarIndex, encodeSidecarIndex, type SidecarIndex } from '@edl/recordio';

/** The environment variable that moves the index cache. */
export const INDEX_CACHE_ENV = 'EDL_INDEX_CACHE_DIR';

/** The index cache directory: `EDL_INDEX_CACHE_DIR`, else `~/.cache/elasticdl-ts/index`. */
export function defaultIndexCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env[INDEX_CACHE_ENV];
  return fromEnv !== undefined && fromEnv !== ''
    ? fromEnv
    : join(homedir(), '.cache', 'elasticdl-ts', 'index');
}

/**
 * Indexes of remote objects kept on local disk, one sidecar-format file per object version: the
 * key is a SHA-256 of the format, the URL and the version (ETag), so a replaced object never finds
 * the old index. Processes of one machine (a local job's workers) share it; a file is written to a
 * temporary name and renamed, so a reader never sees half of one.
 */
export class IndexCache {
  constructor(readonly directory: string) {}

  /** The cached index of this version of `location`, if any and intact. */
  async get(
    format: SidecarIndex['format'],
    location: string,
    version: string,
    dataSize: number,
  ): Promise<SidecarIndex | undefined> {
    const bytes = await this.getBytes(format, location, version);
    if (bytes === undefined) return undefined;
    try {
      const index = decodeSidecarIndex(bytes, format, this.#path(format, location, version));
      return index.dataSize === dataSize ? index : undefined;
    } catch {
      // A damaged cache file is rebuilt, as a missing one is.
      return undefined;
    }
  }

  /** Stores `index` for this version of `location`; a cache that cannot be written is skipped. */
  async put(location: string, version: string, index: SidecarIndex): Promise<boolean> {
    return this.putBytes(index.format, location, version, encodeSidecarIndex(index));
  }

  /**
   * The cached bytes of an index of `kind` (a format, or a format with the options that shape its
   * index) for this version of `location`, undefined when none is cached. The caller checks them.
   */
  async getBytes(kind: string, location: string, version: string): Promise<Uint8Array | undefined> {
    try {
      return await readFile(this.#path(kind, location, version));
    } catch {
      return undefined;
    }
  }

  /** Stores an index's bytes under `kind` for this version of `location`; false when the cache cannot be written. */
  async putBytes(kind: string, location: string, version: string, bytes: Uint8Array): Promise<boolean> {
    const path = this.#path(kind, location, version);
    const temporary = `${path}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    try {
      await mkdir(this.directory, { recursive: true });
      await writeFile(temporary, bytes);
      await rename(temporary, path);
      return true;
    } catch {
      return false;
    }
  }

  #path(format: string, location: string, version: string): string {
    const key = createHash('sha256').update(`${format}\n${location}\n${version}`).digest('hex');
    return join(this.directory, `${key}.idx`);
  }
}
