import { createHash } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { decodeSidecarIndex, encodeSidecarIndex, type SidecarIndex } from '@edl/recordio';

/**
 * What a {@link RemoteIndexProvider} answers: an index's bytes, nothing (it holds no index of that
 * version), or the size of one too large to send and the limit it is over.
 */
export type RemoteIndexAnswer =
  | { readonly index: Uint8Array }
  | { readonly tooLargeBytes: number; readonly limitBytes: number }
  | undefined;

/**
 * Another process's index cache, asked when the local one misses: a worker pod asks its master
 * (`MasterClient` of @edl/proto is one), which built the indexes when it cut the shards, so that
 * pods that share no disk do not each repeat a header walk.
 */
export interface RemoteIndexProvider {
  /**
   * The index of `kind` (a format, or a format with the options that shape its index) of version
   * `version` (an ETag) of `location`; an index of any other version is never answered.
   */
  fileIndex(kind: string, location: string, version: string): Promise<RemoteIndexAnswer>;
}

/** Where a looked-up index came from: this process's cache directory, or its provider. */
export type CachedIndexOrigin = 'cache' | 'master';

const emitWarning = (message: string): void => {
  process.emitWarning(message);
};
let provider: RemoteIndexProvider | undefined;
let warnProvider = emitWarning;

/**
 * Sets (or, with `undefined`, removes) the provider every {@link IndexCache} of this process asks
 * on a miss. `warn` (default: `process.emitWarning`) receives why an answer was not used (too
 * large, unreachable); the index is then built locally, as without a provider. A worker sets it
 * once it is connected to its master; the master's own process never does (it serves its cache).
 */
export function setRemoteIndexProvider(
  next: RemoteIndexProvider | undefined,
  warn?: (message: string) => void,
): void {
  provider = next;
  warnProvider = warn ?? emitWarning;
}

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
 * temporary name and renamed, so a reader never sees half of one. On a miss it asks the process's
 * {@link RemoteIndexProvider}, if one is set, and keeps a good answer.
 */
export class IndexCache {
  constructor(readonly directory: string) {}

  /** The cached (or provided) index of this version of `location`, if any and intact, and where it came from. */
  async get(
    format: SidecarIndex['format'],
    location: string,
    version: string,
    dataSize: number,
  ): Promise<{ readonly index: SidecarIndex; readonly origin: CachedIndexOrigin } | undefined> {
    const found = await this.lookup(format, location, version, (bytes, name) => {
      try {
        const index = decodeSidecarIndex(bytes, format, name);
        return index.dataSize === dataSize ? index : undefined;
      } catch {
        // A damaged index is rebuilt, as a missing one is.
        return undefined;
      }
    });
    return found === undefined ? undefined : { index: found.value, origin: found.origin };
  }

  /**
   * The index of `kind` for this version of `location`, as `check` reads it: from this cache, else
   * from the process's provider (stored here once `check` accepts it). `check` returns undefined for
   * bytes that are not a good index of the object (damaged, another size), which count as a miss.
   */
  async lookup<T>(
    kind: string,
    location: string,
    version: string,
    check: (bytes: Uint8Array, name: string) => T | undefined,
  ): Promise<{ readonly value: T; readonly origin: CachedIndexOrigin } | undefined> {
    const local = await this.getBytes(kind, location, version);
    const cached = local === undefined ? undefined : check(local, this.#path(kind, location, version));
    if (cached !== undefined) return { value: cached, origin: 'cache' };
    const from = provider;
    if (from === undefined) return undefined;
    let answer: RemoteIndexAnswer;
    try {
      answer = await from.fileIndex(kind, location, version);
    } catch (error) {
      warnProvider(
        `the index of ${location} could not be had from the ElasticDL master (${(error as Error).message}): building it here`,
      );
      return undefined;
    }
    if (answer === undefined) return undefined;
    if ('tooLargeBytes' in answer) {
      warnProvider(
        `the index of ${location} is ${answer.tooLargeBytes} bytes, over the master's limit of ${answer.limitBytes} bytes per message: building it here`,
      );
      return undefined;
    }
    const provided = check(answer.index, `${location} (index from the master)`);
    if (provided === undefined) return undefined;
    await this.putBytes(kind, location, version, answer.index);
    return { value: provided, origin: 'master' };
  }

  /** Stores `index` for this version of `location`; a cache that cannot be written is skipped. */
  async put(location: string, version: string, index: SidecarIndex): Promise<boolean> {
    return this.putBytes(index.format, location, version, encodeSidecarIndex(index));
  }

  /**
   * The bytes of an index of `kind` (a format, or a format with the options that shape its index)
   * for this version of `location` in this cache only, undefined when none is cached. The caller
   * checks them.
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
