import { createOptimizer, learningRateFactor, resolveOptimizerConfig } from '@edl/common';
import { describe, expect, it } from 'vitest';

describe('cosine learning-rate decay (Keras CosineDecay)', () => {
  const decay = { type: 'cosine', steps: 100, alpha: 0.1 } as const;

  it('falls from 1 along half a cosine to alpha, then stays there', () => {
    expect(learningRateFactor(decay, 0)).toBe(1);
    // Keras: (1 - alpha) * 0.5 * (1 + cos(pi * step / steps)) + alpha.
    expect(learningRateFactor(decay, 50)).toBeCloseTo(0.9 * 0.5 + 0.1, 12);
    expect(learningRateFactor(decay, 25)).toBeCloseTo(0.9 * 0.5 * (1 + Math.SQRT1_2) + 0.1, 12);
    expect(learningRateFactor(decay, 100)).toBeCloseTo(0.1, 12);
    expect(learningRateFactor(decay, 1000)).toBeCloseTo(0.1, 12);
    expect(learningRateFactor(undefined, 1000)).toBe(1);
    for (let step = 1; step <= 100; step++)
      expect(learningRateFactor(decay, step)).toBeLessThan(learningRateFactor(decay, step - 1));
  });

  it('is checked and resolved with the optimizer config: alpha defaults to 0', () => {
    expect(resolveOptimizerConfig({ type: 'sgd', decay: { type: 'cosine', steps: 10 } })).toEqual({
      type: 'sgd',
      learningRate: 0.01,
      decay: { type: 'cosine', steps: 10, alpha: 0 },
    });
    expect(resolveOptimizerConfig({ type: 'sgd' })).toEqual({ type: 'sgd', learningRate: 0.01 });
    expect(() => resolveOptimizerConfig({ type: 'adam', decay: { type: 'cosine', steps: 0 } })).toThrow(
      /optimizer\.decay\.steps/,
    );
    expect(() =>
      resolveOptimizerConfig({ type: 'adam', decay: { type: 'exponential', steps: 5 } as never }),
    ).toThrow(/optimizer\.decay\.type/);
    expect(() =>
      resolveOptimizerConfig({ type: 'adam', decay: { type: 'cosine', steps: 5, rate: 2 } as never }),
    ).toThrow(/'rate'/);
  });

  it("scales each update of SGD by the schedule at the optimizer's step", () => {
    const opt = createOptimizer({ type: 'sgd', learningRate: 0.5, decay: { type: 'cosine', steps: 4 } });
    const weights = new Float32Array([0]);
    const expected = [0];
    for (let update = 0; update < 6; update++) {
      opt.beginStep();
      opt.apply('w', weights, new Float32Array([1]), 2);
      expected[0] = Math.fround(
        (expected[0] as number) -
          0.5 * 2 * learningRateFactor({ type: 'cosine', steps: 4, alpha: 0 }, update),
      );
      expect(weights[0]).toBe(expected[0]);
    }
    // The factors of updates 0-3 sum to 1 + 0.854 + 0.5 + 0.146 = 2.5; updates 4 and 5 come after the
    // schedule's end, at alpha = 0, and move nothing.
    expect(weights[0]).toBeCloseTo(-2.5, 5);
  });
});
