import { describe, expect, it } from 'vitest';
import { ReaderCache } from '../../src/readers/reader-cache.js';

/** A resource that records whether it was closed. */
class Resource {
  closed = false;
  constructor(readonly key: string) {}
  close(): void {
    this.closed = true;
  }
}

describe('ReaderCache', () => {
  it('reuses open entries, closes the least recently used idle one, never one in use', async () => {
    const made: Resource[] = [];
    const cache = new ReaderCache(2, async (key) => {
      const r = new Resource(key);
      made.push(r);
      return r;
    });
    const a = await cache.acquire('a');
    cache.release('a');
    const b = await cache.acquire('b');
    cache.release('b');
    expect(await cache.acquire('a')).toBe(a); // a is now the most recent
    cache.release('a');
    const c = await cache.acquire('c'); // evicts b, the least recently used idle entry
    expect(b.closed).toBe(true);
    expect(a.closed).toBe(false);
    expect(cache.size).toBe(2);
    // With a and c busy, d goes over capacity rather than closing a busy entry.
    await cache.acquire('a');
    const d = await cache.acquire('d');
    expect(cache.size).toBe(3);
    expect(made.filter((r) => r.closed).map((r) => r.key)).toEqual(['b']);
    cache.release('a');
    cache.release('c');
    cache.release('d');
    await cache.acquire('d');
    expect(cache.size).toBe(2);
    expect(c.closed).toBe(true); // c was used before a's last use
    expect(a.closed).toBe(false);
    expect(d.closed).toBe(false);
    expect(cache.opened).toBe(4);
    await cache.closeAll();
    expect(made.every((r) => r.closed)).toBe(true);
    expect(cache.size).toBe(0);
  });

  it('shares one open between concurrent acquires and does not cache a failed open', async () => {
    let opens = 0;
    let fail = true;
    const cache = new ReaderCache(4, async (key) => {
      opens += 1;
      await new Promise((r) => setTimeout(r, 5));
      if (fail) throw new Error(`cannot open ${key}`);
      return new Resource(key);
    });
    await expect(Promise.all([cache.acquire('x'), cache.acquire('x')])).rejects.toThrow('cannot open x');
    expect(opens).toBe(1);
    expect(cache.size).toBe(0);
    fail = false;
    const [first, second] = await Promise.all([cache.acquire('x'), cache.acquire('x')]);
    expect(first).toBe(second);
    expect(opens).toBe(2);
  });
});
