import { checkNonEmptyString, checkObject, checkOptionalInteger, expectedMessage } from '@edl/common';
import type { JsonObject } from '../../protocols.js';
import { defaultIndexCacheDir } from './index-cache.js';
import type { ResolvedRemoteReadOptions } from './remote-reads.js';

/** How file readers fetch objects that have no local path (S3, HTTP). Every field is optional. */
export interface RemoteReadOptions {
  /** Bytes one ranged GET asks for at most (whole chunks or frame blocks; a bigger one alone). Default 8 MiB. */
  readonly partBytes?: number;
  /**
   * Ranged GETs in flight at once, per reader (and, apart from them, files being opened: their
   * sidecar GETs or header walks). Default 64: as many as the worker's TaskFeed may announce tasks
   * ahead, so a directory of small objects (one task each) can have all of them in flight. Large
   * pieces are held to fewer by `readAheadBytes` (8 pieces of 8 MiB in 64 MiB).
   */
  readonly maxInFlight?: number;
  /** Fetched, not yet decoded bytes of announced ranges held at most. Default 64 MiB. */
  readonly readAheadBytes?: number;
  /** Where indexes built by a header walk are cached. Default `EDL_INDEX_CACHE_DIR`, else `~/.cache/elasticdl-ts/index`. */
  readonly indexCacheDir?: string;
}

const KEYS = ['partBytes', 'maxInFlight', 'readAheadBytes', 'indexCacheDir'];
const MIB = 1024 * 1024;

/** Checks `options.remote`; returns the settings and what was given (for `describe()`). */
export function checkRemoteOptions(value: unknown): {
  readonly resolved: ResolvedRemoteReadOptions;
  readonly given: JsonObject | undefined;
} {
  const o = checkObject(value ?? {}, 'options.remote');
  for (const key of Object.keys(o)) {
    if (!KEYS.includes(key)) {
      throw new TypeError(expectedMessage(`one of ${KEYS.join(', ')}`, 'a key of options.remote', key));
    }
  }
  const resolved = {
    partBytes: checkOptionalInteger(o.partBytes, 'options.remote.partBytes', 8 * MIB, 1, 2 ** 31),
    maxInFlight: checkOptionalInteger(o.maxInFlight, 'options.remote.maxInFlight', 64, 1, 256),
    readAheadBytes: checkOptionalInteger(
      o.readAheadBytes,
      'options.remote.readAheadBytes',
      64 * MIB,
      0,
      Number.MAX_SAFE_INTEGER,
    ),
    indexCacheDir:
      o.indexCacheDir === undefined
        ? defaultIndexCacheDir()
        : checkNonEmptyString(o.indexCacheDir, 'options.remote.indexCacheDir'),
  };
  return { resolved, given: value === undefined ? undefined : ({ ...o } as JsonObject) };
}
