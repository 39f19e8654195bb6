import { type CallSite, fromThrown } from './errors.js';
import type { NativeReader } from './native/addon-types.js';
import { getAddon } from './native/load-addon.js';
import type { NativeChunkCache, NativeChunkCacheStats } from './native/prefetch-types.js';

/** Counters of a reader's chunk cache. */
export type ChunkCacheStats = NativeChunkCacheStats;

/**
 * Random access to single records through a native cache of decoded chunks, bounded in bytes:
 * nearby reads share one decode. Created on the first `get`, so readers that only scan pay nothing.
 * Records are views that keep their chunk alive (not copies), even after the cache drops it.
 */
export class RecordCache {
  readonly #reader: NativeReader;
  readonly #capacity: number;
  readonly #path: string;
  #native: NativeChunkCache | undefined;

  constructor(reader: NativeReader, capacityBytes: number, path: string) {
    this.#reader = reader;
    this.#capacity = capacityBytes;
    this.#path = path;
  }

  /** Record `index` (already range-checked), from the cache or decoded on the libuv pool. */
  get(index: number, callSite: CallSite): Promise<Uint8Array> {
    let cache: NativeChunkCache;
    let hit: Buffer | undefined;
    try {
      cache = this.#open();
      hit = cache.lookup(index);
    } catch (error) {
      return Promise.reject(fromThrown(error, callSite, this.#path));
    }
    if (hit !== undefined) return Promise.resolve(view(hit));
    return cache.load(index).then(view, (error: unknown) => {
      throw fromThrown(error, callSite, this.#path);
    });
  }

  /** Same as {@link RecordCache.get}, decoding on the calling thread on a miss. */
  getSync(index: number, callSite: CallSite): Uint8Array {
    try {
      const cache = this.#open();
      return view(cache.lookup(index) ?? cache.getSync(index));
    } catch (error) {
      throw fromThrown(error, callSite, this.#path);
    }
  }

  /** Hits, misses, decodes, evictions, bytes and chunks held (zeros before the first get). */
  stats(): ChunkCacheStats {
    return this.#native?.stats() ?? { hits: 0, misses: 0, decodes: 0, evictions: 0, bytes: 0, chunks: 0 };
  }

  /** Drops the cached chunks (records handed out stay valid). */
  close(): void {
    this.#native?.close();
  }

  #open(): NativeChunkCache {
    this.#native ??= getAddon().openChunkCache(this.#reader, this.#capacity);
    return this.#native;
  }
}

/** A plain Uint8Array over the same memory (Buffer's methods are slower and not part of the API). */
function view(b: Buffer): Uint8Array {
  return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
}
