import { checkNumber, checkOneOf, checkSafeInteger } from '@edl/common';
import { fmix32, fnv1a32, hashRowId } from './id-hash.js';

/**
 * How an embedding row starts: `uniform` draws each element from [-scale, scale) (default scale
 * 0.05, the bounds of TensorFlow.js' and Keras' default `randomUniform` embeddings initializer);
 * `normal` from a normal distribution with mean 0 and standard deviation `stddev` (default 0.05).
 */
export type RowInitializerConfig =
  | { readonly type: 'uniform'; readonly scale?: number }
  | { readonly type: 'normal'; readonly stddev?: number };

/** Golden-ratio increment: consecutive element counters land far apart before mixing. */
const GOLDEN = 0x9e3779b9;
const TWO_POW_32 = 2 ** 32;

/**
 * Computes embedding rows from (seed, table name, id) alone, with no generator state: the same seed
 * gives the same model whatever order rows are created in and whichever shard holds them, and a
 * row that was never created reads as the value it would be created with.
 *
 * Each row has a 64-bit key, two 32-bit lanes `a = hashRowId(id, fnv1a32(name) ^ seedLow)` and
 * `b = hashRowId(id, fmix32(fnv1a32(name) + seedHigh + 0x9e3779b9))`; element counter `c` gives the
 * uniform `(fmix32(fmix32(a + c * 0x9e3779b9) ^ b) + 0.5) / 2^32` in (0, 1). A uniform row uses
 * counter j for element j; a normal row uses counters 2j and 2j+1 in Box-Muller's cosine branch.
 */
export class RowInitializer {
  readonly config: Readonly<Required<RowInitializerConfig>>;
  readonly #saltA: number;
  readonly #saltB: number;

  /**
   * @param seed - the job's seed, any safe integer.
   * @param tableName - the table's name: two tables with one seed start differently.
   */
  constructor(seed: number, tableName: string, config: RowInitializerConfig = { type: 'uniform' }) {
    checkSafeInteger(seed, 'seed');
    const nameHash = fnv1a32(tableName);
    const seedHigh = Math.floor(seed / TWO_POW_32) >>> 0;
    this.#saltA = (nameHash ^ seed) >>> 0;
    this.#saltB = fmix32(nameHash + seedHigh + GOLDEN);
    this.config = resolveInitializer(config);
  }

  /** Writes the initial row of `id` into `out[at .. at + dim)`. */
  fill(id: number, out: Float32Array, at: number, dim: number): void {
    const a = hashRowId(id, this.#saltA);
    const b = hashRowId(id, this.#saltB);
    const uniform = (counter: number) =>
      (fmix32(fmix32(a + Math.imul(counter, GOLDEN)) ^ b) + 0.5) / TWO_POW_32;
    const config = this.config;
    if (config.type === 'uniform') {
      for (let j = 0; j < dim; j++) out[at + j] = config.scale * (2 * uniform(j) - 1);
    } else {
      for (let j = 0; j < dim; j++) {
        const radius = Math.sqrt(-2 * Math.log(uniform(2 * j)));
        out[at + j] = config.stddev * radius * Math.cos(2 * Math.PI * uniform(2 * j + 1));
      }
    }
  }
}

function resolveInitializer(config: RowInitializerConfig): Readonly<Required<RowInitializerConfig>> {
  const type = checkOneOf(config?.type, 'initializer.type', ['uniform', 'normal'] as const);
  if (type === 'uniform') {
    const scale = (config as { scale?: number }).scale ?? 0.05;
    return { type, scale: checkNumber(scale, 'initializer.scale', 0) };
  }
  const stddev = (config as { stddev?: number }).stddev ?? 0.05;
  return { type, stddev: checkNumber(stddev, 'initializer.stddev', 0) };
}
