/** Resolution with which non-integer weights are turned into whole counts per block. */
const RESOLUTION = 10_000;

/**
 * The deterministic order in which `mix` draws from its datasets, computable at any position in O(1).
 *
 * The weights become whole counts `c_k` (exact for integer weights, else the largest-remainder
 * apportionment of 10,000 reduced by their gcd). A block of `B = sum(c_k)` outputs takes `c_k`
 * elements of dataset `k`, spread by smooth weighted round-robin (as nginx balances upstreams), and
 * blocks repeat. So output `i` is element `floor(i / B) * c_k + r` of dataset `k`, where `(k, r)` is
 * entry `i mod B` of one precomputed table, and the proportions are exact over every block.
 */
export class MixSchedule {
  /** Elements of each dataset per block. */
  readonly counts: readonly number[];
  /** Outputs per block. */
  readonly blockSize: number;
  readonly #dataset: Int32Array;
  readonly #rank: Int32Array;
  /** `#positions[k][r]`: position in the block of dataset k's r-th element. */
  readonly #positions: Int32Array[];

  constructor(weights: readonly number[]) {
    this.counts = toCounts(weights);
    this.blockSize = this.counts.reduce((sum, count) => sum + count, 0);
    this.#dataset = new Int32Array(this.blockSize);
    this.#rank = new Int32Array(this.blockSize);
    this.#positions = this.counts.map((count) => new Int32Array(count));
    const current = this.counts.map(() => 0);
    const taken = this.counts.map(() => 0);
    for (let position = 0; position < this.blockSize; position++) {
      let best = 0;
      for (let k = 0; k < current.length; k++) {
        current[k]! += this.counts[k]!;
        if (current[k]! > current[best]!) best = k;
      }
      current[best]! -= this.blockSize;
      this.#dataset[position] = best;
      this.#rank[position] = taken[best]!;
      this.#positions[best]![taken[best]!] = position;
      taken[best]!++;
    }
  }

  /** The dataset and the element of it that output `position` is. */
  locate(position: number): [dataset: number, element: number] {
    const block = Math.floor(position / this.blockSize);
    const offset = position - block * this.blockSize;
    const dataset = this.#dataset[offset]!;
    return [dataset, block * this.counts[dataset]! + this.#rank[offset]!];
  }

  /** The output position of element `element` of dataset `dataset` (the inverse of `locate`). */
  positionOf(dataset: number, element: number): number {
    const count = this.counts[dataset]!;
    const block = Math.floor(element / count);
    return block * this.blockSize + this.#positions[dataset]![element - block * count]!;
  }

  /**
   * Number of outputs before some dataset runs out, given the dataset lengths: a mixture stops at the
   * first exhausted dataset, so that its proportions hold to the end.
   */
  mixedLength(lengths: readonly number[]): number {
    let length = Number.POSITIVE_INFINITY;
    lengths.forEach((n, k) => {
      if (Number.isFinite(n)) length = Math.min(length, this.positionOf(k, n));
    });
    return length;
  }
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

function toCounts(weights: readonly number[]): number[] {
  const total = weights.reduce((sum, w) => sum + w, 0);
  let counts: number[];
  if (weights.every((w) => Number.isInteger(w)) && total <= RESOLUTION) {
    counts = [...weights];
  } else {
    const exact = weights.map((w) => (w / total) * RESOLUTION);
    counts = exact.map((x) => Math.max(1, Math.floor(x)));
    let missing = RESOLUTION - counts.reduce((sum, c) => sum + c, 0);
    const byRemainder = exact
      .map((x, k) => [x - Math.floor(x), k] as const)
      .sort((a, b) => b[0] - a[0] || a[1] - b[1]);
    for (let i = 0; missing > 0; i = (i + 1) % byRemainder.length, missing--) counts[byRemainder[i]![1]]!++;
  }
  const divisor = counts.reduce(gcd);
  return counts.map((c) => c / divisor);
}
