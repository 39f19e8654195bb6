/**
 * A small seeded PRNG (mulberry32) whose whole state is one uint32. It gives the same numbers from
 * the same seed on every machine and Node version, which Math.random cannot, and a checkpoint can
 * store its `state` so that a restarted process draws exactly what the first run would have.
 */
export class SeededRandom {
  #state: number;

  /** @param seed - any number; only its low 32 bits count. */
  constructor(seed: number) {
    this.#state = seed >>> 0;
  }

  /** The whole state; `new SeededRandom(r.state)` continues where `r` is. */
  get state(): number {
    return this.#state;
  }

  /** A float in [0, 1). */
  next(): number {
    this.#state = (this.#state + 0x6d2b79f5) >>> 0;
    let t = this.#state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }

  /** Approximately normal (sum of four uniforms), mean 0, standard deviation 1. */
  normal(): number {
    return (this.next() + this.next() + this.next() + this.next() - 2) * Math.sqrt(3);
  }

  /** Fisher-Yates shuffle in place; returns `items`. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1));
      const tmp = items[i] as T;
      items[i] = items[j] as T;
      items[j] = tmp;
    }
    return items;
  }
}

/** A seeded generator of floats in [0, 1) as a plain function (the same sequence as {@link SeededRandom}). */
export function mulberry32(seed: number): () => number {
  const random = new SeededRandom(seed);
  return () => random.next();
}
