import { checkInteger } from '@edl/common';

/** Where a sampler gets its uniforms in [0, 1): `SeededRandom` of @edl/common fits. */
export interface UniformSource {
  next(): number;
}

/**
 * Ranks `1..n` with probability proportional to `1 / k^s` (a Zipf law), by Hörmann and Derflinger's
 * rejection-inversion ("Rejection-inversion to generate variates from monotone discrete
 * distributions", 1996), as Apache Commons RNG implements it: constant memory and time per draw
 * whatever `n` (10^7 ranks need no table), about 1.1 uniforms per draw. Exact, not an approximation
 * of the law, for any `s > 0`.
 */
export class ZipfSampler {
  readonly n: number;
  readonly exponent: number;
  readonly #hIntegralX1: number;
  readonly #hIntegralN: number;
  readonly #squeeze: number;

  /**
   * @param n - the number of ranks (at least 1, at most 2^31 - 1).
   * @param exponent - `s`, above 0 (click logs: about 1.1).
   */
  constructor(n: number, exponent: number) {
    this.n = checkInteger(n, 'zipf.n', 1, 2 ** 31 - 1);
    if (!(Number.isFinite(exponent) && exponent > 0))
      throw new RangeError(`Expected a finite exponent above 0 for zipf.exponent but received ${exponent}`);
    this.exponent = exponent;
    this.#hIntegralX1 = this.#hIntegral(1.5) - 1;
    this.#hIntegralN = this.#hIntegral(n + 0.5);
    this.#squeeze = 2 - this.#hIntegralInverse(this.#hIntegral(2.5) - this.#h(2));
  }

  /** One rank in `[1, n]`. */
  sample(random: UniformSource): number {
    for (;;) {
      const u = this.#hIntegralN + random.next() * (this.#hIntegralX1 - this.#hIntegralN);
      const x = this.#hIntegralInverse(u);
      const k = Math.min(this.n, Math.max(1, Math.floor(x + 0.5)));
      if (k - x <= this.#squeeze || u >= this.#hIntegral(k + 0.5) - this.#h(k)) return k;
    }
  }

  /** `1 / x^s`. */
  #h(x: number): number {
    return Math.exp(-this.exponent * Math.log(x));
  }

  /** An antiderivative of `h`: `(x^(1-s) - 1) / (1 - s)`, `log x` at `s = 1`. */
  #hIntegral(x: number): number {
    const logX = Math.log(x);
    return expm1Ratio((1 - this.exponent) * logX) * logX;
  }

  #hIntegralInverse(x: number): number {
    const t = Math.max(-1, x * (1 - this.exponent));
    return Math.exp(log1pRatio(t) * x);
  }
}

/** `log1p(x) / x`, continuous at 0. */
function log1pRatio(x: number): number {
  return Math.abs(x) > 1e-8 ? Math.log1p(x) / x : 1 - x * (0.5 - x * (1 / 3 - 0.25 * x));
}

/** `expm1(x) / x`, continuous at 0. */
function expm1Ratio(x: number): number {
  return Math.abs(x) > 1e-8 ? Math.expm1(x) / x : 1 + x * 0.5 * (1 + (x / 3) * (1 + 0.25 * x));
}
