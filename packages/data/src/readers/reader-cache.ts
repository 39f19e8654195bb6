/** Something the cache can close. */
export interface Closable {
  close(): void | Promise<void>;
}

interface Entry<T> {
  readonly opening: Promise<T>;
  value: T | undefined;
  users: number;
}

/**
 * Keeps up to `capacity` opened resources (RecordIO readers) by key, least recently used first out,
 * so that consecutive tasks of one shard reuse one open file. An entry in use is never closed: if
 * every entry is busy the cache runs over its capacity until some are released.
 */
export class ReaderCache<T extends Closable> {
  readonly #capacity: number;
  readonly #open: (key: string) => Promise<T>;
  /** Map order is recency order: an entry is moved to the end on every acquire. */
  readonly #entries = new Map<string, Entry<T>>();
  #opened = 0;

  constructor(capacity: number, open: (key: string) => Promise<T>) {
    this.#capacity = capacity;
    this.#open = open;
  }

  /** Resources open now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Resources opened since the cache was made (a reuse does not count). */
  get opened(): number {
    return this.#opened;
  }

  /** The resource for `key`, opened if needed; call `release(key)` once done with it. */
  async acquire(key: string): Promise<T> {
    let entry = this.#entries.get(key);
    if (entry === undefined) {
      const opening = this.#open(key);
      entry = { opening, value: undefined, users: 0 };
      this.#opened += 1;
      const created = entry;
      opening.then(
        (value) => {
          created.value = value;
        },
        () => {
          // A failed open is not cached: the next acquire tries again.
          if (this.#entries.get(key) === created) this.#entries.delete(key);
        },
      );
    } else {
      this.#entries.delete(key);
    }
    this.#entries.set(key, entry);
    entry.users += 1;
    try {
      const value = await entry.opening;
      await this.#evict();
      return value;
    } catch (error) {
      entry.users -= 1;
      throw error;
    }
  }

  /** Marks one use of `key` as finished. */
  release(key: string): void {
    const entry = this.#entries.get(key);
    if (entry !== undefined && entry.users > 0) entry.users -= 1;
  }

  /** Closes every resource (in use or not): the owner is shutting down. */
  async closeAll(): Promise<void> {
    const entries = [...this.#entries.values()];
    this.#entries.clear();
    await Promise.all(entries.map(async (e) => (await e.opening.catch(() => undefined))?.close()));
  }

  async #evict(): Promise<void> {
    if (this.#entries.size <= this.#capacity) return;
    for (const [key, entry] of this.#entries) {
      if (this.#entries.size <= this.#capacity) break;
      if (entry.users === 0 && entry.value !== undefined) {
        this.#entries.delete(key);
        await entry.value.close();
      }
    }
  }
}
