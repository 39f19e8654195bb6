import { describe, expect, it } from 'vitest';
import { AUC_BUCKETS, accuracyPartial, aucPartial, msePartial } from '../src/index.js';

describe('metric partial sums', () => {
  it('counts correct predictions for accuracy', () => {
    const partial = accuracyPartial([1, 0, 2, 2], [1, 1, 2, 0]);
    expect(partial.kind).toEqual({ case: 'mean', value: expect.objectContaining({ sum: 2, count: 4 }) });
  });

  it('sums squared errors for MSE', () => {
    const partial = msePartial([1, 2], [2, 4]);
    expect(partial.kind).toEqual({ case: 'mean', value: expect.objectContaining({ sum: 5, count: 2 }) });
  });

  it('buckets scores per label for AUC, clamping to [0, 1]', () => {
    const partial = aucPartial([1, 0, 1, 0], [1, 0, 0.5, -3]);
    if (partial.kind.case !== 'auc') throw new Error('expected an AUC partial');
    const { positives, negatives } = partial.kind.value;
    expect(positives).toHaveLength(AUC_BUCKETS);
    expect(positives[AUC_BUCKETS - 1]).toBe(1);
    expect(positives[AUC_BUCKETS / 2]).toBe(1);
    expect(negatives[0]).toBe(2);
    expect(positives.reduce((a, b) => a + b, 0) + negatives.reduce((a, b) => a + b, 0)).toBe(4);
  });

  it('rejects label and prediction arrays of different lengths', () => {
    expect(() => msePartial([1, 2], [1])).toThrow(
      new RangeError('Expected 2 values for predictions but received 1'),
    );
  });
});
